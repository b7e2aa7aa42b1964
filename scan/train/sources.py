"""Reading the training and held-out sources (SOURCES.md lists them).

Every loader returns a list of `(text, source_name)`; nothing here looks at
a score. The split is fixed here, by whole source, before any training.
"""

import ast
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys

import written
from pieces import CHUNK, chunks, strip_html  # noqa: F401 (train.py reads sources.chunks)

def jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# --- spikee (train) ----------------------------------------------------------

# Seed folders written by spikee's authors. Left out: the in-the-wild and
# simsonsun jailbreak folders (scripts that fetch the in-the-wild jailbreak
# prompts, reserved for evaluation), toxic-chat and wildguardmix (fetched
# from elsewhere, other licences), and the legacy copy of cybersec.
SPIKEE_SEEDS = [
    "seeds-cybersec-2026-01",
    "seeds-sysmsg-extraction-2025-04",
    "seeds-llm-mailbox",
    "seeds-investment-advice",
]


def spikee(root: str, rng: random.Random) -> tuple[list, list]:
    base = os.path.join(root, "spikee/data/workspace/datasets")
    attacks, benign = [], []
    for seed in SPIKEE_SEEDS:
        d = os.path.join(base, seed)
        jbs = jsonl(os.path.join(d, "jailbreaks.jsonl"))
        ins = jsonl(os.path.join(d, "instructions.jsonl"))
        docs = [r.get("document", "") for r in jsonl(os.path.join(d, "base_user_inputs.jsonl"))]
        docs = [x for x in docs if x and "<PLACEHOLDER>" != x.strip()]
        for jb in jbs:
            for inst in rng.sample(ins, min(4, len(ins))):
                text = jb["text"].replace("<INSTRUCTION>", inst["instruction"])
                attacks.append((text, f"spikee/{seed}"))
        for doc in docs:
            benign.append((doc.replace("<PLACEHOLDER>", ""), f"spikee/{seed}/documents"))
    fp = os.path.join(base, "seeds-investment-advice-fp/standalone_user_inputs.jsonl")
    for r in jsonl(fp):
        benign.append((r["text"], "spikee/investment-advice-fp"))
    return attacks, benign


# --- promptinject (train) ----------------------------------------------------


def promptinject(root: str, rng: random.Random) -> tuple[list, list]:
    tree = ast.parse(open(os.path.join(root, "promptinject/prompt_data.py"), encoding="utf-8").read())
    data = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                data[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    rogue = list(data["rogue_strings"].values())
    bases = [v["instruction"] for v in data["openai_playground_prompts"].values() if v["instruction"].strip()]
    attacks, benign = [], []
    for group in ("goal_hikacking_attacks", "prompt_leaking_attacks"):
        for attack in data[group].values():
            for r in rogue:
                text = attack["instruction"].replace("{REPLACE_rogue_string}", r)
                # The attack alone: the base prompts are the application's
                # own instructions, benign.
                attacks.append((text, "promptinject"))
    for b in bases:
        benign.append((b, "promptinject/base-prompts"))
    return attacks, benign


# --- local benign text (train) ------------------------------------------------


def stdlib(rng: random.Random, cap: int) -> list:
    lib = os.path.dirname(os.__file__)
    files = sorted(glob.glob(os.path.join(lib, "*.py")))
    out = []
    for f in files:
        for c in chunks(open(f, encoding="utf-8", errors="replace").read()):
            out.append((c, "python-stdlib"))
    return sorted(rng.sample(out, min(cap, len(out))))


def debian_doc(rng: random.Random, cap: int) -> list:
    out = []
    for f in sorted(glob.glob("/usr/share/doc/**/*", recursive=True)):
        name = os.path.basename(f).lower()
        if not os.path.isfile(f) or "copyright" in name:
            continue
        if not (name.startswith(("readme", "changelog", "news")) or name.endswith((".html", ".txt", ".md"))):
            continue
        try:
            raw = gzip.open(f).read() if f.endswith(".gz") else open(f, "rb").read()
        except OSError:
            continue
        text = raw.decode("utf-8", errors="replace")
        if name.endswith((".html", ".html.gz")):
            text = strip_html(text)
        for c in chunks(text)[:6]:
            out.append((c, "debian-doc"))
    return sorted(rng.sample(out, min(cap, len(out))))


def snippets(texts: list, rng: random.Random, per: int) -> list:
    """A few lines of each text: short benign texts (a message, a log line,
    a line of code) are common, and without them the model's bias is set
    by attacks, which are short."""
    out = []
    for text, src in texts:
        lines = [line for line in text.splitlines() if line.strip()]
        for _ in range(min(per, len(lines))):
            i = rng.randrange(len(lines))
            out.append(("\n".join(lines[i : i + rng.randint(1, 3)]), src + "/lines"))
    return out


def chatterbot(root: str) -> list:
    """Every conversation of chatterbot-corpus, in every language, one text
    each: everyday chat (food, travel, money, greetings, feelings)."""
    import yaml

    out = []
    for f in sorted(glob.glob(os.path.join(root, "chatterbot_corpus/data/*/*.yml"))):
        try:
            doc = yaml.safe_load(open(f, encoding="utf-8"))
        except yaml.YAMLError:
            continue
        for conv in (doc or {}).get("conversations", []) or []:
            if isinstance(conv, list):
                text = "\n".join(str(x) for x in conv)
                if text.strip():
                    out.append((text, "chatterbot-corpus"))
    return out


def wordnet(rng: random.Random, n: int) -> list:
    """Paragraphs of WordNet 3.0 glosses and their example sentences
    (Debian's wordnet-base): everyday words in plain prose."""
    glosses = []
    for part in ("noun", "verb", "adj", "adv"):
        path = f"/usr/share/wordnet/data.{part}"
        if not os.path.exists(path):
            continue
        for line in open(path, encoding="utf-8", errors="replace"):
            if line.startswith("  ") or "|" not in line:
                continue
            glosses.append(line.split("|", 1)[1].strip())
    out = []
    for _ in range(n if glosses else 0):
        out.append((" ".join(rng.sample(glosses, rng.randint(2, 8))), "wordnet-glosses"))
    return out


# --- agent-injection-bench (train) -------------------------------------------


def aib(root: str) -> tuple[list, list]:
    """agent-injection-bench's attacks (the injected channel text of every
    row but its controls) and, as benign, its controls' texts and every
    row's user task."""
    attacks, benign = [], []
    for r in jsonl(os.path.join(root, "aib/data/attacks.jsonl")):
        text = r.get("injected", "")
        if r.get("family") == "control":
            benign.append((text, "aib/controls"))
        elif text.strip():
            attacks.append((text, "aib"))
        benign.append((r["task"], "aib/tasks"))
    return attacks, benign


# --- inspect-evals: AgentThreatBench and CodeIPI (train) -----------------------


def agent_threat_bench(root: str) -> tuple[list, list]:
    """AgentThreatBench's poisoned tool data: the memory entries holding the
    record's attack marker, the inbox emails at its (1-based) attack
    indices, and the customer records' long `issue` notes (every one of
    them an instruction to the assistant; the short ones are plain
    requests). Everything else in a record, and its user task, is benign."""
    base = os.path.join(root, "inspect_evals/agent_threat_bench/data")
    attacks, benign = [], []

    def put(text: str, bad: bool):
        (attacks if bad else benign).append((text, "agent-threat-bench" + ("" if bad else "/benign")))

    for r in json.load(open(os.path.join(base, "memory_poison.json"), encoding="utf-8")):
        marker = r.get("attack_marker") or None
        for v in r["memory_store"].values():
            put(v, bool(marker and marker in v))
        benign.append((r["input"], "agent-threat-bench/tasks"))
    for r in json.load(open(os.path.join(base, "autonomy_hijack.json"), encoding="utf-8")):
        bad = set(r.get("attack_email_indices", []))
        for i, e in enumerate(r["inbox"], start=1):
            put(f"From: {e['from']}\nSubject: {e['subject']}\n\n{e['body']}", i in bad)
        benign.append((r["input"], "agent-threat-bench/tasks"))
    for r in json.load(open(os.path.join(base, "data_exfil.json"), encoding="utf-8")):
        for c in r["customer_db"]:
            put(c["issue"], len(c["issue"]) > 150)
        benign.append((r["input"], "agent-threat-bench/tasks"))
    return attacks, benign


def _around(text: str, pat: re.Pattern) -> str:
    """The paragraphs of a file around those its payload indicator matches:
    the injected note, not the code around it (every window of an attack is
    trained as one)."""
    paras = re.split(r"\n\s*\n", text)
    hits = {i for i, p in enumerate(paras) if pat.search(p)}
    keep = sorted({j for i in hits for j in (i - 1, i, i + 1) if 0 <= j < len(paras)})
    return "\n\n".join(paras[j] for j in keep)


def code_ipi(root: str) -> tuple[list, list]:
    """CodeIPI's injected artifacts (the issue text or the repository file
    its payload indicator matches) and, as benign, its clean samples' issues
    and files and every sample's coding task."""
    d = json.load(open(os.path.join(root, "inspect_evals/ipi_coding_agent/dataset/samples.json"), encoding="utf-8"))
    attacks, benign = [], []
    for r in d:
        benign.append((r["task_description"], "code-ipi/tasks"))
        texts = [("ISSUE", r.get("issue_text") or "")] + sorted(r["repo_files"].items())
        pat = re.compile(r["payload_indicator"]) if r.get("payload_indicator") else None
        for name, text in texts:
            if not text.strip():
                continue
            if not r["is_benign"] and pat and pat.search(text):
                attacks.append((_around(text, pat) if name != "ISSUE" else text, "code-ipi"))
            elif r["is_benign"]:
                benign.append((text, "code-ipi/benign"))
    return attacks, benign


def mind2web(root: str) -> list:
    """Mind2Web's everyday web tasks (booking, shopping, travel), as the
    GuardAgent sample in inspect-evals ships them: benign user requests."""
    path = os.path.join(root, "inspect_evals/mind2web_sc/data/seeact/sample_labeled_all.json")
    d = json.load(open(path, encoding="utf-8"))
    return [(t, "mind2web-tasks") for t in sorted({r["confirmed_task"] for r in d})]


# --- deepteam (train) -----------------------------------------------------------

# Its attacks on the model's own rules; left out: `multilingual` and
# `semantic_manipulation`, whose examples are harmful requests without an
# attempt on the instructions (like PyRIT's harm seeds).
DEEPTEAM_SKIP = {"multilingual", "semantic_manipulation"}


def deepteam(root: str) -> list:
    """The worked example attacks (`"input": "..."`) in deepteam's
    single-turn attack templates, written by its authors as few-shot
    examples for its attacker model."""
    out = []
    base = os.path.join(root, "deepteam/attacks/single_turn")
    for f in sorted(glob.glob(os.path.join(base, "*/template.py"))):
        if os.path.basename(os.path.dirname(f)) in DEEPTEAM_SKIP:
            continue
        for x in re.findall(r'"input":\s*"((?:[^"\\]|\\.)*)"', open(f, encoding="utf-8").read()):
            # The file holds each example as JSON inside a Python string.
            text = x.replace("\\\\", "\\").replace("\\n", "\n").replace('\\"', '"')
            text = text.replace("{{", "{").replace("}}", "}")
            if len(text) > 60:
                out.append((text, "deepteam"))
    return out


# Texts read from the SpamAssassin ham and composed by written_business.
HAM_TEXTS = 3000
BUSINESS_TEXTS = 3000


def training(roots: dict, seed: int, extra: bool = False) -> tuple[list, list]:
    """The training set; with `extra`, also the sources added for issue 44
    (SOURCES.md: measured, not shipped)."""
    rng = random.Random(seed)
    a1, b1 = spikee(roots["spikee"], rng)
    a2, b2 = promptinject(roots["promptinject"], rng)
    a3 = [(t, "written/attacks") for t in written.attacks(rng, 2500)]
    b3 = [(t, "written/benign") for t in written.benign(rng, 2500)]
    b4 = stdlib(rng, 3000)
    b5 = debian_doc(rng, 3000)
    b6 = snippets(b4 + b5, rng, 2)
    b7 = chatterbot(roots["chatterbot-corpus"])
    b8 = wordnet(rng, 3000)
    if not extra:
        return a1 + a2 + a3, b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8
    a9, b9 = aib(roots["agent-injection-bench"])
    a10, b10 = agent_threat_bench(roots["inspect-evals"])
    a11, b11 = code_ipi(roots["inspect-evals"])
    a12 = deepteam(roots["deepteam"])
    b13 = mind2web(roots["inspect-evals"])
    # Benign text of those attacks' register (business mail, tickets,
    # notices), without which they broke the calibration (SOURCES.md).
    import spamassassin
    import written_business

    b14 = spamassassin.ham(roots["spamassassin"], rng, HAM_TEXTS)
    b15 = [(t, "business/composed") for t in written_business.composed(rng, BUSINESS_TEXTS)]
    b15 += [(t, "business/whole") for t in written_business.whole()]
    attacks = a1 + a2 + a3 + a9 + a10 + a11 + a12
    benign = b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8 + b9 + b10 + b11 + b13 + b14 + b15
    return attacks, benign


# --- held out: agentdojo ------------------------------------------------------


def _strings(module: str, names: set[str]) -> list[str]:
    """String assignments to `names` in a module, f-strings rendered with the
    module's and its classes' string constants."""
    tree = ast.parse(open(module, encoding="utf-8").read())
    consts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                consts[node.targets[0].id] = node.value.value

    def render(v) -> str | None:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return v.value
        if isinstance(v, ast.JoinedStr):
            parts = []
            for p in v.values:
                if isinstance(p, ast.Constant):
                    parts.append(str(p.value))
                elif isinstance(p, ast.FormattedValue) and isinstance(p.value, ast.Name):
                    parts.append(consts.get(p.value.id, "X"))
                else:
                    parts.append("X")
            return "".join(parts)
        return None

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in names:
            s = render(node.value)
            if s:
                out.append(s)
    return out


def _yaml_strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _yaml_strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _yaml_strings(v)]
    return []


def agentdojo(root: str, rng: random.Random) -> tuple[list, list, list]:
    """(attacks, benign tool outputs, benign user prompts)."""
    import yaml

    pkg = os.path.join(root, "agentdojo")
    goals, prompts = [], []
    for f in sorted(glob.glob(os.path.join(pkg, "default_suites/v1/*/injection_tasks.py"))):
        goals += _strings(f, {"GOAL"})
    for f in sorted(glob.glob(os.path.join(pkg, "default_suites/v1/*/user_tasks.py"))):
        prompts += _strings(f, {"PROMPT"})
    templates = []
    for f in sorted(glob.glob(os.path.join(pkg, "attacks/*.py"))):
        for node in ast.walk(ast.parse(open(f, encoding="utf-8").read())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "{goal}" in node.value:
                if "Attack which" not in node.value:
                    templates.append(node.value)
    env = []
    for f in sorted(glob.glob(os.path.join(pkg, "data/suites/*/**/*.yaml"), recursive=True)):
        if "injection_vectors" in f:
            continue
        text = open(f, encoding="utf-8").read()
        text = re.sub(r"\{injection_[a-z_0-9]+\}", "", text)
        try:
            obj = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        env += [s for s in _yaml_strings(obj) if len(s) >= 40]
    env = sorted(set(env))
    attacks = []
    for goal in goals:
        for t in templates:
            payload = t.replace("{goal}", goal).replace("{user}", "Emma Johnson").replace("{model}", "GPT-4")
            payload = payload.replace("{tools}", "")
            host = rng.choice(env)
            cut = rng.randint(0, len(host))
            attacks.append((host[:cut] + payload + host[cut:], "agentdojo"))
    benign = [(s, "agentdojo/environment") for s in env]
    users = [(p, "agentdojo/user-tasks") for p in sorted(set(prompts))]
    return attacks, benign, users


# --- held out: pyrit ----------------------------------------------------------


def pyrit(root: str) -> list:
    """PyRIT's system-prompt theft seeds (from ps-fuzz) and 0DIN's disclosed
    jailbreaks. Left out: its jailbreak templates (many from jailbreakchat
    and the in-the-wild collection) and its copy of garak's prompts."""
    import yaml

    base = os.path.join(root, "pyrit/datasets/seed_datasets/local")
    files = [os.path.join(base, "psfuzz_steal_system.prompt")] + sorted(glob.glob(os.path.join(base, "0din/*.prompt")))
    out = []
    for f in files:
        doc = yaml.safe_load(open(f, encoding="utf-8"))
        name = "pyrit/psfuzz" if "psfuzz" in f else "pyrit/0din"
        for seed in doc.get("seeds", []):
            value = seed["value"] if isinstance(seed, dict) else str(seed)
            # ps-fuzz's attacks are one seed, numbered and split by `|`.
            parts = re.split(r"\|\s*\d+\.\s", value) if name == "pyrit/psfuzz" else [value]
            parts = [re.sub(r"^\d+\.\s", "", p.strip()) for p in parts]
            out += [(p, name) for p in parts if p.strip()]
    return out


# --- held out: man pages and crate READMEs ---------------------------------------


def man_pages(rng: random.Random, n: int) -> list:
    pages = sorted(glob.glob("/usr/share/man/man1/*.1*"))
    out = []
    for p in rng.sample(pages, min(n, len(pages))):
        r = subprocess.run(
            ["man", "-P", "cat", "-l", p],
            capture_output=True,
            env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0"},
            timeout=20,
        )
        text = re.sub(r".\x08", "", r.stdout.decode("utf-8", errors="replace"))
        if text.strip():
            out.append((chunks(text, 4000)[0], "man-pages"))
    return out


def crate_readmes(rng: random.Random, n: int) -> list:
    home = os.path.expanduser("~/.cargo/registry/src")
    files = sorted(glob.glob(os.path.join(home, "*/*/README.md")))
    out = []
    for f in rng.sample(files, min(n, len(files))):
        text = open(f, encoding="utf-8", errors="replace").read()
        if text.strip():
            out.append((chunks(text, 4000)[0], "crate-readmes"))
    return out


def held_out(roots: dict, seed: int) -> tuple[list, list, list]:
    """(attacks, benign tool outputs, benign user prompts)."""
    rng = random.Random(seed + 1)
    a1, b1, u1 = agentdojo(roots["agentdojo"], rng)
    a2 = pyrit(roots["pyrit"])
    b2 = man_pages(rng, 300)
    b3 = crate_readmes(rng, 300)
    return a1 + a2, b1 + b2 + b3, u1


if __name__ == "__main__":
    print("use train.py", file=sys.stderr)
