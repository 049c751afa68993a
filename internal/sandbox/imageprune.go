package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
)

// Imported images are keyed by content (imageNamePrefix) and kept by last
// use: every Sandbox that runs a task from one records the time in the
// image record's label labelLastUsed (once per Sandbox and image: one
// metadata write), and PruneImages deletes those unused for longer than a
// bound. containerd's garbage collection then frees their content and
// snapshots. The record's UpdatedAt stands in for an image imported before
// the label existed.
const labelLastUsed = "runmill.dev/last-used"

// stampImage records a use of the imported image name. A failure only
// makes the image look older than it is.
func (s *Sandbox) stampImage(ctx context.Context, name string) {
	if s.stamped[name] { // under imageMu
		return
	}
	_, err := s.client.ImageService().Update(ctx, images.Image{Name: name,
		Labels: map[string]string{labelLastUsed: time.Now().UTC().Format(time.RFC3339)}}, "labels."+labelLastUsed)
	if err == nil {
		if s.stamped == nil {
			s.stamped = map[string]bool{}
		}
		s.stamped[name] = true
	}
}

// lastUsed is when a task last ran from img.
func lastUsed(img images.Image) time.Time {
	if t, err := time.Parse(time.RFC3339, img.Labels[labelLastUsed]); err == nil {
		return t
	}
	return img.UpdatedAt
}

// PrunedImage is an imported image PruneImages deleted.
type PrunedImage struct {
	Name    string
	LastUse time.Time
}

// PruneImages deletes the images runmill imported (named by their
// tarball's content) that no task used for longer than unusedFor, except
// one a container still names (a live run's check, in this containerd
// namespace), and waits for containerd's garbage collection to free what
// only they held. It returns them, oldest use first. Only runmill's
// imports are considered: an image anyone else made in the namespace stays.
func (s *Sandbox) PruneImages(ctx context.Context, unusedFor time.Duration, now time.Time) ([]PrunedImage, error) {
	ctx = s.ctx(ctx)
	s.imageMu.Lock() // no import of this Sandbox meanwhile
	defer s.imageMu.Unlock()
	imgs, err := s.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the imported images: %w", err)
	}
	slices.SortFunc(imgs, func(a, b images.Image) int { return lastUsed(a).Compare(lastUsed(b)) })
	var due []images.Image
	for _, img := range imgs {
		if strings.HasPrefix(img.Name, imageNamePrefix) && now.Sub(lastUsed(img)) > unusedFor {
			due = append(due, img)
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	cs, err := s.client.ContainerService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the containers that may use an image: %w", err)
	}
	inUse := map[string]bool{}
	for _, c := range cs {
		inUse[c.Image] = true
	}
	var out []PrunedImage
	var errs []error
	for _, img := range due {
		if inUse[img.Name] {
			continue
		}
		// Read again: another runmill may have used it since the listing.
		cur, err := s.client.ImageService().Get(ctx, img.Name)
		if err != nil || now.Sub(lastUsed(cur)) <= unusedFor {
			continue
		}
		err = s.client.ImageService().Delete(ctx, img.Name, images.SynchronousDelete())
		if err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the image %s: %w", img.Name, err))
			continue
		}
		delete(s.stamped, img.Name) // a later use imports and stamps it again
		out = append(out, PrunedImage{Name: img.Name, LastUse: lastUsed(cur)})
	}
	return out, errors.Join(errs...)
}
