#!/usr/bin/python3
"""The reference renderer for tests/check_tmpl.c: Python's jinja2 (Debian's
python3-jinja2) in the environment transformers renders chat templates in.

    /usr/bin/python3 tests/tmpl/oracle.py JOBS.json RESULTS.json

JOBS.json is a list of {"id", "template": PATH | "source": TEXT, "vars": {...},
"now": UNIX_SECONDS}; RESULTS.json gets one {"id", "ok", "out" | "error",
"raised"} per job.  "raised" is true when the template called
raise_exception().  Exits 77 when jinja2 cannot be imported (the test is
skipped), 1 on a bad jobs file.

The environment: a sandboxed jinja2 Environment with trim_blocks,
lstrip_blocks and the loop controls; transformers' tojson (json.dumps with
ensure_ascii=False), raise_exception and strftime_now (at the job's "now", in
UTC); its {% generation %} tag (a call block that returns its body); and
llama.cpp's from_json filter (json.loads).  Lists and dicts may be changed in
place (list.append), as llama.cpp allows, so the sandbox is the mutable one.
"""
import datetime
import json
import sys

try:
    import jinja2
    import jinja2.ext
    import jinja2.nodes
    import jinja2.sandbox
except ImportError as e:
    print(f"SKIP: python3-jinja2 is not installed ({e}); tools/deps.sh installs it")
    sys.exit(77)


class Raised(Exception):
    pass


class Generation(jinja2.ext.Extension):
    """transformers' AssistantTracker without the tracking."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation"), [], [], body).set_lineno(lineno)

    def _generation(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise Raised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime(fmt)

    env = jinja2.sandbox.SandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.filters["from_json"] = json.loads
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def run(job):
    if "source" in job:
        source = job["source"]
    else:
        with open(job["template"], encoding="utf-8", newline="") as f:
            source = f.read()
    env = make_env(job.get("now", 0))
    try:
        out = env.from_string(source).render(**job.get("vars", {}))
        # A lone surrogate from a "\ud83d" escape is not UTF-8: as C writes it (WTF-8).
        return {"id": job["id"], "ok": True,
                "out": out.encode("utf-8", "surrogatepass").decode("utf-8", "replace")}
    except Raised as e:
        return {"id": job["id"], "ok": False, "raised": True, "error": str(e)}
    except Exception as e:  # any jinja2 or Python error: the C side must fail too
        return {"id": job["id"], "ok": False, "raised": False,
                "error": f"{type(e).__name__}: {e}"}


def main():
    if len(sys.argv) != 3:
        print("usage: oracle.py JOBS.json RESULTS.json", file=sys.stderr)
        return 1
    with open(sys.argv[1], encoding="utf-8") as f:
        jobs = json.load(f)
    results = [run(job) for job in jobs]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
