"""Scale-out: the SciFact corpus (5,183 documents) embedded on a Dask
LocalCluster of 2 worker processes through the Python binding
(python/squint), sharded, gives the same bytes as one process embedding it
whole. Each worker opens the model once and keeps it (a real cluster does
the same with Client("scheduler:8786"): docs/cluster.md).

usage: test_dask.py MODEL.sqm CORPUS.jsonl     (exit 77: no dask.distributed)
"""
import json
import os
import sys

try:
    from distributed import Client, LocalCluster
except ImportError:
    print("SKIP: python3-distributed is not installed")
    sys.exit(77)
import numpy as np

import squint

model_path, corpus = sys.argv[1], sys.argv[2]
docs = [json.loads(l) for l in open(corpus, encoding="utf-8")]
ids = [d["_id"] for d in docs]
texts = [(d.get("title", "") + " " + d.get("text", "")).strip() for d in docs]


def embed_shard(path, shard):
    """Runs on a worker: the model is opened once per worker process."""
    global _model
    try:
        _model
    except NameError:
        _model = squint.Model(path)
    return os.getpid(), _model.embed(shard, threads=1)


def main():
    whole = squint.Model(model_path).embed(texts, threads=1)
    shards = [texts[i:i + 500] for i in range(0, len(texts), 500)]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        futures = client.map(embed_shard, [model_path] * len(shards), shards, pure=False)
        results = client.gather(futures)
    pids = {p for p, _ in results}
    sharded = np.concatenate([e for _, e in results])
    fails = 0
    ok = sharded.shape == whole.shape and sharded.tobytes() == whole.tobytes()
    print(("ok   - " if ok else "FAIL - ") +
          "%d SciFact documents in %d shards on a 2-worker LocalCluster: the bytes of one process"
          % (len(texts), len(shards)))
    fails += not ok
    ok = len(pids) == 2
    print(("ok   - " if ok else "FAIL - ") + "both worker processes embedded shards (%d pids)" % len(pids))
    fails += not ok
    spread = float(np.mean(whole @ whole.T)) if len(whole) < 10 else float(
        np.mean(whole[:200] @ whole[:200].T))
    ok = spread < 0.99
    print(("ok   - " if ok else "FAIL - ") + "the embeddings differ between documents "
          "(mean pairwise cosine of 200: %.3f)" % spread)
    fails += not ok
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
