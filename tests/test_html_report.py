"""HTML reports rendered in real headless Chromium: verdict, diff, images that actually load, index links."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_medic.graph.api import repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.drivers.batch import run_batch
from kernel_medic.graph.drivers.html_report import html_for_repair
from problems import LIGHT_TOML, SCALE_CANDIDATE, UNREACHABLE_SCALE_REFERENCE, scale_candidate, write_problem

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1200,1600",
]  # fmt: skip
IMAGES_LOADED = "return Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        message = "needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="kmedic-chromium-")
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def assert_self_contained(driver: object) -> None:
    sources = driver.execute_script("return Array.from(document.images).map(i => i.getAttribute('src'))")
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    external = driver.execute_script(
        "return document.querySelectorAll('link[href], script[src], iframe, object, embed').length"
    )
    assert external == 0


def test_repair_report_shows_verdict_diff_and_loaded_heatmaps(tmp_path: Path, browser: object) -> None:
    folder = write_problem(
        tmp_path / "grid_bug", scale_candidate(("triton.cdiv(n, 256)", "n // 256")), toml=LIGHT_TOML
    )
    config = RepairConfig(max_iterations=2, workers=2)
    result = repair(
        folder, None, config, trace=tmp_path / "trace.jsonl", checkpoint_db=tmp_path / "ck.sqlite"
    )
    assert result.status == "repaired"
    page = html_for_repair(result, tmp_path / "out")
    assert page == tmp_path / "out" / "report.html"

    browser.get(page.as_uri())
    assert browser.execute_script(IMAGES_LOADED) == [True, True]  # before and after the repair
    assert_self_contained(browser)
    text = browser.find_element("tag name", "body").text
    assert "REPAIRED" in browser.find_element("id", "verdict").text
    diff = browser.find_element("id", "diff").text
    assert (
        "-        scale_kernel[(n // 256,)]" in diff
        and "+        scale_kernel[(triton.cdiv(n, 256),)]" in diff
    )
    captions = [f.text for f in browser.find_elements("tag name", "figcaption")]
    assert "before the repair" in captions[0] and " 0 of 4000 elements outside tolerance" not in captions[0]
    assert "after the repair" in captions[1] and " 0 of 4000 elements outside tolerance" in captions[1]
    for node in ("intake", "evaluate", "patch", "verify"):  # the graph's path through its nodes
        assert node in text


def test_batch_index_links_every_case_report(tmp_path: Path, browser: object) -> None:
    root = tmp_path / "problems"
    write_problem(root / "passes", SCALE_CANDIDATE, toml=LIGHT_TOML)
    write_problem(
        root / "nested" / "wrong_constant",
        scale_candidate(("x * 2.0", "x * 3.0")),
        UNREACHABLE_SCALE_REFERENCE,
        toml=LIGHT_TOML,
    )
    run = run_batch(root, tmp_path / "out", RepairConfig(max_iterations=1), workers=2, html=True)
    assert Path(run.index_path) == tmp_path / "out" / "index.html"

    browser.get(Path(run.index_path).as_uri())
    links = {a.text: a.get_attribute("href") for a in browser.find_elements("tag name", "a")}
    assert sorted(links) == ["nested/wrong_constant", "passes"]
    for name, href in links.items():
        browser.get(href)
        assert browser.find_element("tag name", "h1").text == Path(name).name  # the link resolved to its page
        loaded = browser.execute_script(IMAGES_LOADED)
        assert loaded and all(loaded)
        assert_self_contained(browser)
    browser.get(links["nested/wrong_constant"])
    assert "UNREPAIRED" in browser.find_element("id", "verdict").text
