# Background jobs, each writing its own file; wait for all, then for one by
# pid and its status.
for i in 1 2 3 4; do
    (sleep 0.$i; echo "job $i done" > out.$i) &
done
wait
cat out.1 out.2 out.3 out.4
sh -c 'exit 7' &
pid=$!
wait $pid
echo "status $?"
sleep 5 &
kill $!
# dash says "Terminated" only when wait itself reaps the job, not when the
# shell reaped it before: a race on the host as in the sandbox, so the
# status is compared and the message is not.
wait $! 2>/dev/null
echo "killed job status $?"
