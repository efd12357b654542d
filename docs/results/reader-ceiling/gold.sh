#!/bin/bash
# The reader's ceiling: HotpotQA's 100 questions over a corpus of their 200 supporting passages only (the other questions' supporting passages the only distractors), links, default 1.5B reader; first 50 (dev), last 50 (untuned, report only).
cd /work/runs
E="flock /tmp/w/bench.lock ./walkrag-a2g eval"
$E --corpus /tmp/w/gold/corpus.jsonl --questions hp-first50.jsonl --index /tmp/w/gold/ix --strategies links -k 5 --out gold-hp-first --dataset hp-first50-gold
$E --corpus /tmp/w/gold/corpus.jsonl --questions hp-last50.jsonl --index /tmp/w/gold/ix --strategies links -k 5 --out gold-hp-last --dataset hp-last50-gold
echo done
