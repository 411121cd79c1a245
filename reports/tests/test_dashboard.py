"""``report dashboard`` on synthetic histories, and the site in headless Chromium."""

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import pytest

from reports import gbench, synth
from reports.history import HistoryDB, parse_date

STEP_BENCH = "variant/gelu_bwd.f32.none.erf_as.u4.avx3/n:4096/thr:1"


def make_history(path, **kw):
    docs = synth.history_docs(**kw)
    with HistoryDB(str(path)) as db:
        for d in docs:
            run = gbench.parse(d, "synthetic")
            db.record(run, d["benchmarks"], d["context"]["actgrad_git_commit"], d["context"]["actgrad_machine_id"],
                      parse_date(d["context"]["date"]))
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """24 commits on two machines, a 10 % step at commit 12 in some benchmarks, a spike at 5."""
    tmp = tmp_path_factory.mktemp("dash")
    db = make_history(tmp / "h.sqlite", commits=24, step_at=12, step=1.10, spike_at=5, machines=("m-one", "m-two"),
                      sizes=(4096,))
    from conftest import run_cli
    r = run_cli("dashboard", "--db", db, "--out", tmp / "site")
    assert r.code == 0, r
    return tmp / "site", r


def test_dashboard_flags_the_step_at_commit_12(site):
    out, r = site
    html = (out / "index.html").read_text()
    opened = html.split('id="open"')[1].split("<h2")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", opened)[1:] if "<tr>" in opened else []
    assert rows, opened
    # exactly the stepped benchmarks (names with gelu_bwd.f32.none), on both machines, at c012
    flagged = set()
    for row in rows:
        name = re.search(r'class="regression" href="[^"]+">([^<]+)</a>', row).group(1)
        machine = re.findall(r"<td>([^<]*)</td>", row)[0]
        assert "gelu_bwd.f32.none" in name, name
        assert "<td>c012</td>" in row, row
        flagged.add((name, machine))
    assert (STEP_BENCH, "m-one") in flagged and (STEP_BENCH, "m-two") in flagged
    assert len(flagged) == 4          # 2 variants x 2 machines
    assert "2 open regression" not in r.out and "4 open regression(s)" in r.out
    # the spike at commit 5 hit every benchmark and is flagged nowhere
    assert "c005" not in html.split('id="changes"')[1].split("<h2")[0]


def test_noise_only_history_has_no_regression(tmp_path, cli_run):
    db = make_history(tmp_path / "h.sqlite", commits=20, step_at=None, spike_at=9, machines=("m",), sizes=(4096,))
    r = cli_run("dashboard", "--db", db, "--out", tmp_path / "site")
    assert r.code == 0, r
    assert "0 open regression(s)" in r.out
    assert 'id="no-open"' in (tmp_path / "site" / "index.html").read_text()


def test_recovered_step_is_not_open(tmp_path, cli_run, small_run):
    """A slowdown at 8 fixed at 16: two steps, not an open regression."""
    db = tmp_path / "h.sqlite"
    import datetime as dt
    with HistoryDB(str(db)) as h:
        for i in range(24):
            f = 1.15 if 8 <= i < 16 else 1.0
            doc = synth.make_run(seed=i, ops=("gelu_bwd",), dtypes=("f32",), sizes=[4096], reps=3, atlas=False,
                                 scale=f, commit=f"k{i:02d}", machine="m",
                                 date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=i))
            h.record(gbench.parse(doc, "s"), doc["benchmarks"], f"k{i:02d}", "m", parse_date(doc["context"]["date"]))
    r = cli_run("dashboard", "--db", db, "--out", tmp_path / "site")
    assert r.code == 0 and "0 open regression(s)" in r.out, r
    html = (tmp_path / "site" / "index.html").read_text()
    changes = html.split('id="changes"')[1]
    assert "<td>k08</td>" in changes and "<td>k16</td>" in changes


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for k in ("href", "src"):
            if a.get(k):
                self.hrefs.append(a[k])


def chromium():
    exe = os.environ.get("ACTGRAD_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("chromium is not installed: the browser check needs Debian's 'chromium' package "
                    "(scripts/setup-deps installs it: apt-get install -y chromium), "
                    "or set ACTGRAD_CHROMIUM to a Chromium binary")
    return exe


def dump_dom(path):
    exe = chromium()
    cmd = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", "--allow-file-access-from-files",
           "--virtual-time-budget=3000", "--dump-dom", "file://" + str(path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, f"chromium failed ({p.returncode}): {p.stderr[-2000:]}"
    assert "<html" in p.stdout, f"chromium printed no DOM: {p.stderr[-2000:]}"
    return p.stdout


def test_site_renders_in_headless_chromium_and_links_resolve(site):
    out, _ = site
    dom = dump_dom(out / "index.html")
    # rendered (the DOM as the browser built it), with the expected parts
    assert "actgrad performance dashboard" in dom
    assert 'class="open-regressions"' in dom and 'class="regression"' in dom
    assert dom.count('class="machine-benchmarks"') == 2
    first = re.search(r'class="regression" href="([^"]+)"', dom).group(1)
    page = out / unquote(urlsplit(first).path)
    bench_dom = dump_dom(page)
    assert "<svg" in bench_dom and 'class="chart"' in bench_dom and 'class="changepoint"' in bench_dom
    assert "open regression" in bench_dom
    # every relative link of every page resolves to a file, and its #anchor exists
    pages = [out / "index.html"] + sorted((out / "bench").glob("*.html"))
    ids = {}
    for p in pages:
        parser = Links()
        parser.feed(p.read_text())
        ids[p.resolve()] = (parser.ids, parser.hrefs)
    checked = 0
    for p, (_, hrefs) in ids.items():
        for h in hrefs:
            u = urlsplit(h)
            if u.scheme or h.startswith("//"):
                pytest.fail(f"{p}: external link {h} (the site must work offline)")
            target = (p.parent / unquote(u.path)).resolve() if u.path else p
            assert target.is_file(), f"{p}: link {h} -> {target} does not exist"
            if u.fragment:
                assert u.fragment in ids[target][0], f"{p}: anchor #{u.fragment} missing in {target}"
            checked += 1
    assert checked > 20
