# A named pipe between a background writer and a reader; a FIFO as a lock
# step between two jobs.
mkfifo pipe
(seq 1 5; echo end) > pipe &
while read -r line; do echo "read $line"; done < pipe
wait
mkfifo ping
(read -r x < ping; echo "got $x") &
echo hello > ping
wait
test -p pipe && echo "pipe is a FIFO"
rm pipe ping
