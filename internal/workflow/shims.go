package workflow

import (
	"os"
	"os/exec"
	"path/filepath"
)

// shims writes the commands a container would run as its root and this machine must not: each
// records its call in shims.log. apt-get runs for real only with a private apt state (-o …, as
// the kit's provisioning scripts use it); installing the image's own packages is recorded, not
// done. runuser runs the command as this user, with the user's HOME=/home/<user> mapped under
// the root.
func (r *Runner) shims() error {
	dir := filepath.Join(r.Root, "shims")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	realApt, _ := exec.LookPath("apt-get")
	record := `printf '%s\n' "$(basename "$0") $*" >>"$WORKFLOW_ROOT/shims.log"` + "\n"
	scripts := map[string]string{
		"apt-get": record + `for a in "$@"; do case $a in -o) exec ` + quote(realApt) + ` "$@";; esac; done
echo "workflow: apt-get $* — the image's packages: recorded, not installed here" >&2
`,
		"useradd": record + `for a in "$@"; do u=$a; done; mkdir -p "$WORKFLOW_ROOT/home/$u"` + "\n",
		"chown":   record,
		"runuser": record + `while [ $# -gt 0 ] && [ "$1" != -- ]; do case $1 in -u) shift; u=$1;; esac; shift; done
shift
args=()
for a in "$@"; do case $a in HOME=/home/*) a="HOME=$WORKFLOW_ROOT/home/${a#HOME=/home/}";; esac; args+=("$a"); done
exec "${args[@]}"
`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/usr/bin/env bash\nset -e\n"+body), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func quote(s string) string { return "'" + s + "'" }
