//go:build !unix

package privatefile

import "io/fs"

// secret checks that fi is a regular file; modes and owners are not
// checked on this system.
func secret(fi fs.FileInfo) *problem {
	if !fi.Mode().IsRegular() {
		return &problem{what: "is not a regular file"}
	}
	return nil
}

// trusted checks that fi is a regular file or a directory; modes and
// owners are not checked on this system.
func trusted(fi fs.FileInfo) *problem {
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return &problem{what: "is neither a regular file nor a directory"}
	}
	return nil
}
