# timeout(1): a command that overruns is stopped (124), -s KILL (137),
# one that finishes keeps its status; --preserve-status.
timeout 0.3 sleep 10
echo "timeout: $?"
timeout -s KILL 0.3 sleep 10
echo "timeout -s KILL: $?"
timeout 5 sh -c 'exit 9'
echo "in time: $?"
timeout --preserve-status 0.3 sleep 10
echo "preserved: $?"
timeout -k 0.2 0.2 sh -c 'trap "" TERM; sleep 10'
echo "kill after: $?"
