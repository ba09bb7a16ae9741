"""Strip Claude Code's own prompt text (system prompt, tool schemas, skill listing) from a
transcript of a test run: every record stays, in order, with its type, ids and other fields."""
import gzip, json, sys
REMOVED = "[removed: Claude Code's own prompt text]"
BIG = 2000
def strip(value):
    return REMOVED if len(json.dumps(value)) > BIG else value
out = []
for line in open(sys.argv[1]):
    record = json.loads(line)
    if record["type"] in ("api-request-shape", "api-request-blob"):
        record = {key: strip(value) for key, value in record.items()}
    elif record["type"] == "attachment" and record["attachment"].get("type") != "hook_additional_context":  # contextd's own text stays
        record["attachment"] = {key: strip(value) for key, value in record["attachment"].items()}
    out.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
with gzip.open(sys.argv[2], "wt") as f:
    f.write("\n".join(out) + "\n")
