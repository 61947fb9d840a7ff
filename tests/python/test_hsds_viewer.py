"""h5web's HSDS provider browsing a file through the HSDS endpoint, in headless Chromium:
the page hsds.html (web/, served by the HTTP gateway on its own port) talks to
--hsds-endpoint, another origin, with Basic credentials of the token file. It opens the
file, lists its root in the explorer, shows a dataset's values in the matrix and a plot,
an attribute, a scalar and strings."""
import os
import pathlib
import time

import h5py
import numpy as np
import pytest

from daemons import Daemon, daemon_binary, free_port
from test_viewer import (CHROMEDRIVER, CHROMIUM, artifact, body_shows, chromium, page_missing,
                         png_colors, wait_for)

TOKEN = "hsds-viewer-token"


@pytest.fixture(scope="module")
def page():
    """(daemon, the page's URL for viewer.h5, the matrix's values)."""
    if os.environ.get("H5ARKD_WRAPPER"):
        pytest.skip("the browser test measures the page, not the daemon under a tool: the "
                    "endpoint's own tests run there")
    bindir = pathlib.Path(daemon_binary()).resolve().parent
    why = page_missing(bindir)
    if why or not (bindir / "web" / "hsds.html").is_file():
        pytest.skip(why or "the page was built without hsds.html")
    pytest.importorskip("selenium", reason="python3-selenium is not installed")
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not os.access(tool, os.X_OK):
            pytest.skip(f"{tool} not found: install Debian's chromium and chromium-driver")
    gw, hsds = free_port(), free_port()
    d = Daemon(locales=2, token=TOKEN, extra_args=["--http-endpoint", f"127.0.0.1:{gw}",
                                                   "--hsds-endpoint", f"127.0.0.1:{hsds}"])
    matrix = np.arange(12 * 9, dtype=np.float64).reshape(12, 9) * 0.5 - 7
    d.data_dir.mkdir(exist_ok=True)
    with h5py.File(d.data_dir / "viewer.h5", "w") as f:
        f["matrix"] = matrix
        f["matrix"].attrs["units"] = "kelvin"
        f.attrs["experiment"] = "cryo-run-17"
        f["temperature"] = 77.25
        f["words"] = np.array([b"alpha", b"beta", b"gamma"], dtype="S5")
        f.create_group("inner")["line"] = np.sin(np.linspace(0, 6, 50))
    url = (f"http://127.0.0.1:{gw}/hsds.html?endpoint=http://127.0.0.1:{hsds}"
           f"&file=/viewer.h5&user=alice&token={TOKEN}")
    yield d, url, matrix
    d.cleanup()


@pytest.fixture(scope="module")
def browser(page):
    driver = chromium()
    yield driver
    driver.quit()


def open_path(driver, url, path):
    driver.get(url)
    wait_for(driver, f'[role=treeitem][data-path="{path}"]', f"{path} in the explorer")[0].click()


def test_the_root_and_its_attribute(page, browser):
    from selenium.webdriver.common.by import By
    _, url, _ = page
    browser.get(url)
    for path in ["/matrix", "/temperature", "/words", "/inner"]:
        wait_for(browser, f'[role=treeitem][data-path="{path}"]', f"{path} in the explorer")
    body_shows(browser, "Inspect", "the Inspect tab")
    browser.find_element(By.XPATH, "//button[normalize-space()='Inspect']").click()
    body_shows(browser, "cryo-run-17", "the root attribute's value")


def test_a_dataset_shows_its_values_and_a_plot(page, browser):
    from selenium.webdriver.common.by import By
    _, url, matrix = page
    open_path(browser, url, "/matrix")
    canvas = wait_for(browser, "canvas", "the heatmap's canvas")[0]
    time.sleep(1)
    browser.save_screenshot(str(artifact("hsds-heatmap.png")))
    assert len(png_colors(canvas.screenshot_as_png)) > 20, "the heatmap looks blank"
    browser.find_element(By.XPATH, "//button[normalize-space()='Matrix']").click()
    cells = wait_for(browser, "[role=gridcell]", "the matrix's cells", count=9)
    shown = [float(c.text.replace("\u2212", "-")) for c in cells if c.text.strip()]
    assert shown[:9] == matrix[0].tolist(), shown[:9]
    browser.find_element(By.XPATH, "//button[normalize-space()='Inspect']").click()
    body_shows(browser, "kelvin", "the dataset's attribute")


def test_scalars_and_strings(page, browser):
    _, url, _ = page
    open_path(browser, url, "/temperature")
    body_shows(browser, "77.25", "the scalar")
    open_path(browser, url, "/words")
    cells = wait_for(browser, "[role=gridcell]", "the strings' cells", count=3)
    assert [c.text for c in cells if c.text in ("alpha", "beta", "gamma")] == \
        ["alpha", "beta", "gamma"]
    browser.save_screenshot(str(artifact("hsds-strings.png")))
