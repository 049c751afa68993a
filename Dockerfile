# syntax=docker/dockerfile:1
# runmill, containerd and runc in one small image, for self-hosted runners
# and CI systems other than GitHub Actions (DESIGN.md § Packaging; the GitHub
# entrypoint is action.yml). runmill starts its own private containerd in
# the container, which needs privileges:
#
#   docker run --rm --privileged -v "$PWD:/repo" runmill \
#     verify --repo /repo --base "$BASE" --candidate "$HEAD" --out /repo/.runmill-state
#
# Checks run on the toolchain of this image (/usr, /bin, /lib …): build FROM
# it and install the toolchain your checks need, or give checks an image:.

# The build stage runs the same command as scripts/test.sh (action/ tests
# that they stay the same).
FROM golang:1.26.8-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o bin/runmill ./cmd/runmill

FROM debian:13.2-slim
# git: runmill reads the repository through the git binary; containerd and
# runc: the sandbox every check runs in.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends ca-certificates containerd git runc \
	&& rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/runmill /usr/local/bin/runmill
LABEL org.opencontainers.image.title="runmill" \
	org.opencontainers.image.source="https://github.com/runmill/verify"
ENV RUNMILL_STATE_DIR=/var/lib/runmill
# root: runmill starts containerd, which must run as root; every check then
# runs as an unprivileged user inside its own containerd task.
USER root
ENTRYPOINT ["runmill"]
CMD ["--help"]
