package recurspec

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// zoneDirs are where the tz database's names are looked up for a
// suggestion: $ZONEINFO when it is a directory, then the system's.
var zoneDirs = []string{os.Getenv("ZONEINFO"), "/usr/share/zoneinfo", "/usr/lib/zoneinfo"}

// suggestZone is the tz database name that ends in "/"+tz (Berlin →
// Europe/Berlin), compared without case, or "" when none or several do.
// Only asked after time.LoadLocation refused tz, so it costs a directory
// walk on an error only.
func suggestZone(tz string) string {
	want := "/" + strings.ToLower(tz)
	for _, dir := range zoneDirs {
		if dir == "" {
			continue
		}
		var found []string
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			name, _ := filepath.Rel(dir, path)
			if strings.HasSuffix(strings.ToLower("/"+name), want) && !strings.HasPrefix(name, "posix/") && !strings.HasPrefix(name, "right/") {
				found = append(found, filepath.ToSlash(name))
			}
			return nil
		})
		if len(found) == 1 {
			return found[0]
		}
	}
	return ""
}
