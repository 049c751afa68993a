module github.com/runmill/verify

go 1.26.8

require (
	github.com/containerd/containerd/v2 v2.4.2 // indirect
	github.com/google/go-github/v62 v62.0.0 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/sethvargo/go-githubactions v1.4.0 // indirect
	github.com/sigstore/sigstore v1.10.11 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
