#!/usr/bin/env bash
# Installs the Debian bookworm packages hpo needs, skipping what is there.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds the Python references)
set -euo pipefail

pkgs=(g++ cmake make pkg-config git ca-certificates
      libboost-dev libhiredis-dev redis-server nlohmann-json3-dev libfmt-dev libgtest-dev
      libeigen3-dev zlib1g-dev
      libssl-dev openssl  # HTTPS of the API (Boost.Asio over OpenSSL); the TLS tests make certificates
      python3         # the Python command trials of the tests and examples (standard library only)
      # the hpo Python library's integrations and the examples' trials, tested for real
      python3-numpy python3-sklearn python3-xgboost python3-torch python3-torchvision
      redis-sentinel  # the Sentinel failover tests (a primary, a replica, three Sentinels)
      slurm-wlm munge # the Slurm deploy test (slurmctld, slurmd, munged on this machine)
      libtorch-dev libgloo-dev libopenblas0-pthread
      dataset-fashion-mnist
      chromium
      systemd         # systemd-analyze verify, for the units the deploy test checks (PID 1 may be anything)
      libyaml-cpp-dev # the deploy test reads the Kubernetes manifests
      clang libclang-rt-14-dev)  # the fuzz build (scripts/fuzz.sh): libFuzzer, ASan, UBSan
if [[ "${1:-}" == "--bench" ]]; then
  pkgs+=(python3-optuna python3-redis)
fi
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)

# The account whose group trials run with (hpo-worker --trial-user): a worker
# that runs as root runs its trials under uids of their own, never as root.
ensure_trial_user() {
  getent passwd hpo-trial >/dev/null 2>&1 && return 0
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin hpo-trial && echo "install-deps: created the system user hpo-trial"
}
trap ensure_trial_user EXIT

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all packages present"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
