#!/bin/bash
# THP madvise (the machine's default) against always, walkrag-a2g 1.5B generation, alternating.
cd /work/runs
out=/work/runs/thp.jsonl
for round in 1 2 3 4 5; do
  for mode in madvise always; do
    echo $mode > /sys/kernel/mm/transparent_hugepage/enabled
    r=$(./walkrag-a2g bench llm --model local:qwen2.5-coder-1.5b --prompt-tokens 16 --gen-tokens 128 --runs 3 --json 2>/dev/null)
    echo "{\"round\": $round, \"thp\": \"$mode\", \"report\": $r}" >> $out
  done
done
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
echo done
