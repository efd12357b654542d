#!/bin/bash
# The reader's ceiling on MuSiQue dev 50 (dev): a corpus of the questions' supporting passages only, links, default 1.5B reader.
cd /work/runs
flock /tmp/w/bench.lock ./walkrag-a2g eval --corpus /tmp/w/goldmq/corpus.jsonl --questions /work/shared/data/musique-dev-50/questions.jsonl --index /tmp/w/goldmq/ix --strategies links -k 5 --out gold-mq --dataset musique-dev-50-gold
echo done
