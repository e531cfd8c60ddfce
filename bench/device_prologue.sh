# Sourced right after `set -euo pipefail` by the scripts that run on the lent GPU machine
# (bench/device_*.sh, scripts/device_gtest.sh): `-h`/`--help` prints the calling script's header
# comment (line 2 up to its `set -euo pipefail`) and exits; ROOT is the repository, D its .devrun
# bundle (what the run tool carries).
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
D="$ROOT/.devrun"
