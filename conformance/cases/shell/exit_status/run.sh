# set -e stops at the first failure; the status and stderr reach the caller.
set -e
echo "starting"
echo "a warning" >&2
ls does-not-exist
echo "not reached"
