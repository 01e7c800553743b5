#!/usr/bin/env bash
# Installs hpo on this host: the binaries, the dashboard, the systemd units
# and their configuration (kept when already there), and the `hpo` user.
#
#   scripts/install.sh [--prefix DIR] [--destdir DIR] [--unit-dir DIR] [--no-build] [--no-user]
#
#   --prefix    where binaries, the dashboard and the docs go (default /usr/local):
#               PREFIX/bin/{hpo,hpo-scheduler,hpo-worker,hpo-train-rank,hpo-predict},
#               PREFIX/share/hpo/ui (the dashboard), PREFIX/share/hpo/python (the hpo
#               Python library every trial imports), PREFIX/share/doc/hpo
#   --destdir   stage everything under this root instead of / (packaging, tests):
#               nothing outside it is touched, no user is made, systemd is not told
#   --unit-dir  the units' folder (default /etc/systemd/system)
#   --no-build  install what $HPO_BUILD_DIR (default build/) holds; otherwise
#               scripts/build.sh builds first
#   --no-user   do not create the `hpo` system user
#
# Then, on a host with systemd:
#   systemctl enable --now hpo-scheduler          # the scheduler (and its embedded Redis)
#   systemctl enable --now hpo-worker@main        # a worker; another host: set HPO_REDIS
#   sudo -u hpo env HPO_HOME=/var/lib/hpo hpo status   # or: hpo --token "$(sudo cat /etc/hpo/token)" ...
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local destdir="" unit_dir=/etc/systemd/system build=1 make_user=1
while (($#)); do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --destdir) destdir=$2; shift 2 ;;
    --unit-dir) unit_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-user) make_user=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$prefix" == /* ]] || { echo "install.sh: --prefix '$prefix' is not an absolute path" >&2; exit 2; }
[[ "$unit_dir" == /* ]] || { echo "install.sh: --unit-dir '$unit_dir' is not an absolute path" >&2; exit 2; }
B=${HPO_BUILD_DIR:-build}
if ((build)); then scripts/build.sh; fi
for bin in cli/hpo scheduler/hpo-scheduler workers/hpo-worker; do
  [[ -x "$B/$bin" ]] || { echo "install.sh: $B/$bin is not built (run scripts/build.sh)" >&2; exit 1; }
done
root=${destdir%/}
staged=0; [[ -n "$root" ]] && staged=1
if ((!staged)) && ((EUID != 0)); then
  echo "install.sh: installing into / needs root (or stage it: --destdir DIR)" >&2; exit 1
fi

install -d "$root$prefix/bin" "$root$prefix/share/hpo" "$root$prefix/share/doc/hpo" \
  "$root$unit_dir" "$root/etc/hpo"
for bin in cli/hpo scheduler/hpo-scheduler workers/hpo-worker workers/hpo-train-rank workers/hpo-predict; do
  if [[ -x "$B/$bin" ]]; then install -m 0755 "$B/$bin" "$root$prefix/bin/"; fi
done
if [[ -f web/ui/dist/index.html ]]; then
  rm -rf "$root$prefix/share/hpo/ui"
  cp -r web/ui/dist "$root$prefix/share/hpo/ui"
  chmod -R u=rwX,go=rX "$root$prefix/share/hpo/ui"
else
  echo "install.sh: the dashboard is not built (web/ui/dist): the API works, / has no page" >&2
fi
install -m 0644 README.md "$root$prefix/share/doc/hpo/"
# The Python library the worker puts on its trials' PYTHONPATH (world-readable:
# trials run under uids of their own).
rm -rf "$root$prefix/share/hpo/python"
install -d "$root$prefix/share/hpo/python/hpo/integrations"
install -m 0644 python/hpo/*.py "$root$prefix/share/hpo/python/hpo/"
install -m 0644 python/hpo/integrations/*.py "$root$prefix/share/hpo/python/hpo/integrations/"

# The units name /usr/local; another prefix is written into them.
for unit in hpo-scheduler.service hpo-worker@.service; do
  sed "s|/usr/local/|$prefix/|g" "deploy/systemd/$unit" > "$root$unit_dir/$unit"
  chmod 0644 "$root$unit_dir/$unit"
done

# The user the units run as; then the configuration, never replacing an operator's.
group=root
if ((make_user)) && ((!staged)); then
  if ! getent passwd hpo > /dev/null; then
    useradd --system --home-dir /var/lib/hpo --no-create-home --shell /usr/sbin/nologin \
      --user-group hpo
  fi
  # Trials run with this account's group, under uids of their own (hpo-worker
  # --trial-user, --trial-uids), never as the worker that holds the secrets.
  if ! getent passwd hpo-trial > /dev/null; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      --user-group hpo-trial
  fi
  group=hpo
fi
keep() {  # keep SRC DEST MODE: installs SRC as DEST unless DEST exists
  if [[ -e "$2" ]]; then echo "install.sh: keeping $2"; return; fi
  install -m "$3" "$1" "$2"
  if ((!staged)); then chgrp "$group" "$2"; fi
}
keep deploy/systemd/scheduler.json "$root/etc/hpo/scheduler.json" 0640
keep deploy/systemd/worker.env "$root/etc/hpo/worker.env" 0640
# The API token: the scheduler refuses a token file others may read (0600, its user's).
if [[ ! -e "$root/etc/hpo/token" ]]; then
  (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$root/etc/hpo/token")
  chmod 0600 "$root/etc/hpo/token"
  if ((!staged)) && [[ "$group" == hpo ]]; then chown hpo:hpo "$root/etc/hpo/token"; fi
fi

if ((!staged)) && [[ -d /run/systemd/system ]]; then systemctl daemon-reload; fi
echo "hpo installed: $root$prefix/bin, units in $root$unit_dir, configuration in $root/etc/hpo"
