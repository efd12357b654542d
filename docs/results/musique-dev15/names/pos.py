"""Where the model's next sources sat in the list of unread names offered (chosen mode), and
what the weighed mode picked; from a run's traces."""
import json, glob, sys, collections
run = sys.argv[1]
positions = collections.Counter()
n = 0
for f in sorted(glob.glob(f"{run}/traces/walk/*.json")):
    steps = json.load(open(f))["steps"]
    offered = None
    for s in steps:
        if s["step"] == "note" and s["message"].startswith(("unread names: ", "names offered as next sources: ")):
            offered = s["message"].split(": ", 1)[1].split("; ")
        if s["step"] == "descriptor" and s.get("origin") == "model" and offered:
            n += 1
            name = s["next_source"]
            positions[offered.index(name) + 1 if name in offered else "not offered"] += 1
print(f"{n} model next sources; position in the list offered: {dict(sorted(positions.items(), key=str))}")
