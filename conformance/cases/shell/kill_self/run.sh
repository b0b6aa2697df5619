# A shell that kills itself with SIGTERM: the task ends by the signal.
echo "going down"
kill -TERM $$
echo "not reached"
