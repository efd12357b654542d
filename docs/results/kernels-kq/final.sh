#!/bin/bash
# One-token passes on K-quant rows as stored (walkrag-kqf) against main's panels (walkrag-a2g, the same kernels as main at 40825b3) and llama.cpp's tg128, alternating:
# six rounds of the 1.5B on AVX-512, two on AVX2 forced, two of the 0.5B; then one 1.5B answer step (links, HotpotQA first 10) and the demo walk's first 3 questions with each binary.
cd /work/runs
out=/work/runs/kq-final.jsonl
gen() { # binary model cpu
  WALKRAG_CPU=$3 ./walkrag-$1 bench llm --model local:qwen2.5-coder-$2 --prompt-tokens 16 --gen-tokens 128 --runs 3 --json 2>/dev/null
}
for round in 1 2 3 4 5 6; do
  for b in kqf a2g; do echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"1.5b\", \"cpu\": \"avx512\", \"report\": $(gen $b 1.5b avx512)}" >> $out; done
  G=$(ls ~/.cache/walkrag/models/qwen2.5-coder-1.5b/*.gguf | head -1)
  echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"size\": \"1.5b\", \"report\": $(bash /work/shared/baselines/llama-bench.sh $G 2 512 2>/dev/null)}" >> $out
done
for round in 1 2; do
  for b in kqf a2g; do echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"1.5b\", \"cpu\": \"avx2\", \"report\": $(gen $b 1.5b avx2)}" >> $out; done
  for b in kqf a2g; do echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"0.5b\", \"cpu\": \"avx512\", \"report\": $(gen $b 0.5b avx512)}" >> $out; done
  G=$(ls ~/.cache/walkrag/models/qwen2.5-coder-0.5b/*.gguf | head -1)
  echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"size\": \"0.5b\", \"report\": $(bash /work/shared/baselines/llama-bench.sh $G 2 512 2>/dev/null)}" >> $out
done
D=/work/shared/data
for b in kqf a2g; do
  rm -rf /tmp/w/ans-$b
  ./walkrag-$b eval --corpus $D/hotpotqa-100/corpus.jsonl --questions hp-first50.jsonl --strategies links --limit 10 -k 5 --index ix-hp --out /tmp/w/ans-$b >/dev/null 2>&1
  python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/ans-$b/results.jsonl')]
print(json.dumps({'answer_step': '$b', 'questions': len(rs), 'mean_s': sum(r['elapsed_ms'] for r in rs)/len(rs)/1000, 'answers': [r['answer'] for r in rs]}))
" >> $out
  rm -rf /tmp/w/demo-$b
  ./walkrag-$b eval --corpus /work/main/demo/sp800-63 --questions /work/main/docs/data/demo/sp800-63.questions.jsonl --index ix-demo --strategies walk --limit 3 -k 5 --out /tmp/w/demo-$b >/dev/null 2>&1
  python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/demo-$b/results.jsonl')]
print(json.dumps({'demo': '$b', 'questions': len(rs), 'mean_s': sum(r['elapsed_ms'] for r in rs)/len(rs)/1000, 'answers': [r['answer'] for r in rs]}))
" >> $out
done
echo done
