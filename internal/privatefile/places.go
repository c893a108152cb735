package privatefile

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
)

// AcceptFlag is the name of the flag, the same in every command, that
// accepts an unsafe place with a warning instead of refusing it.
const AcceptFlag = "insecure-permissions"

// Place is a file or directory a command is told to use by a flag, and
// the check it needs: Dir, Trusted or Secret.
type Place struct {
	Flag, Path string
	Check      func(path string) error
}

// CheckPlaces checks each place whose Path is set, in order. An unsafe
// place is an error naming its flag, what is wrong, how to fix it and
// AcceptFlag; with accept (AcceptFlag given), it is logged on log as a
// warning and used. A place that does not exist is left to its user's own
// error; any other error is returned with the flag.
func CheckPlaces(log *slog.Logger, accept bool, places ...Place) error {
	for _, p := range places {
		if p.Path == "" {
			continue
		}
		err := p.Check(p.Path)
		switch {
		case errors.Is(err, ErrUnsafe) && accept:
			if log != nil {
				log.Warn("using an unsafe place, as -"+AcceptFlag+" allows", "flag", p.Flag, "err", err)
			}
		case errors.Is(err, ErrUnsafe):
			return fmt.Errorf("%s %w (or accept it with -%s)", p.Flag, err, AcceptFlag)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s: %w", p.Flag, err)
		}
	}
	return nil
}
