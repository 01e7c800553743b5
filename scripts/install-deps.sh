#!/usr/bin/env bash
# Installs the Debian bookworm packages hpo needs, skipping what is there.
# Usage: scripts/install-deps.sh [--no-torch] [--tests] [--bench]
#   (none)      what building and running hpo needs: the demo's set (scripts/demo.sh)
#   --no-torch  not LibTorch and the Fashion-MNIST files (scripts/build.sh --no-torch)
#   --tests     adds what the tests need (scripts/test.sh): gtest, Sentinel, Slurm,
#               Chromium, clang for the fuzzers, the Python frameworks the hpo
#               library's integrations are tested against
#   --bench     adds the Python references of the benchmarks (Optuna and its Redis journal)
set -euo pipefail

pkgs=(g++ cmake make ninja-build pkg-config git ca-certificates
      libboost-dev libhiredis-dev redis-server nlohmann-json3-dev libfmt-dev
      libeigen3-dev zlib1g-dev
      libssl-dev openssl  # HTTPS of the API (Boost.Asio over OpenSSL)
      python3)        # command trials and the hpo Python library (standard library only)
# The LibTorch trainers and their data: most of the packages a new machine lacks.
torch_pkgs=(libtorch-dev libgloo-dev libopenblas0-pthread dataset-fashion-mnist)
torch=1
for arg in "$@"; do
  case "$arg" in
    --no-torch) torch=0 ;;
    --tests)
      pkgs+=(libgtest-dev
             redis-sentinel  # the Sentinel failover tests (a primary, a replica, three Sentinels)
             slurm-wlm munge # the Slurm deploy test (slurmctld, slurmd, munged on this machine)
             chromium        # the dashboard's browser tests
             systemd         # systemd-analyze verify, for the units the deploy test checks
             libyaml-cpp-dev # the deploy test reads the Kubernetes manifests
             clang libclang-rt-14-dev  # the fuzz build (scripts/fuzz.sh): libFuzzer, ASan, UBSan
             # the hpo Python library's integrations and examples, tested for real
             python3-numpy python3-sklearn python3-xgboost python3-torch python3-torchvision) ;;
    --bench) pkgs+=(python3-optuna python3-redis python3-torch python3-sklearn python3-numpy) ;;
    *) echo "install-deps: unknown argument '$arg' (--no-torch, --tests, --bench)" >&2
       exit 2 ;;
  esac
done
((torch)) && pkgs+=("${torch_pkgs[@]}")
# Node.js and npm, which build the dashboard, are not installed here: the
# version it needs is not packaged by bookworm (scripts/build-ui.sh says which).

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
