# 200000 lines of words.
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "word%d and %d more words\n", i, i % 17 }'
