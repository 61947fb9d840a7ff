"""The viewer page in a real browser: headless Chromium, driven through chromedriver,
opens the page the daemon serves at / of --http-endpoint (built by CMake beside h5arkd),
against a daemon with tokens and files made by h5py and by the daemon itself. It browses
to a dataset, checks the values the matrix shows and that the heatmap is drawn (a
screenshot of it is kept in the build tree), that h5ark's Strings show as strings, and
that the root group's attributes and scalar datasets are shown."""
import os
import pathlib
import shutil
import socket
import struct
import subprocess
import time
import zlib

import h5py
import numpy as np
import pytest

from daemons import Daemon, daemon_binary, REPO

TOKEN = "viewer-token"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT = 20  # seconds for the page to show what it was asked for


def png_colors(data):
    """The distinct RGB colours of an 8-bit RGB or RGBA PNG (what Chromium's screenshots
    are): enough to tell a drawn plot from a blank canvas."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), width * bpp
    prev, colors = bytearray(stride), set()
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colors.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return colors


def page_missing(bindir):
    """Why the build beside h5arkd (bindir) has no viewer page, or None when it has one: the
    build writes web-missing.txt when npm could not fetch the page's packages
    (web/page.cmake)."""
    web = bindir / "web" / "index.html"
    if web.is_file():
        return None
    missing = bindir / "web-missing.txt"
    if missing.is_file():
        return f"the viewer page was not built: {missing.read_text().strip()}"
    return (f"the viewer page was not built (no {web}): npm was not found when h5arkd was "
            "built, or its target (h5ark_web) was not built")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """(daemon, base URL, the values of /matrix) with the page and a browser ready."""
    if os.environ.get("H5ARKD_WRAPPER"):
        pytest.skip("the browser test measures the page, not the daemon under a tool: the "
                    "gateway's own tests run there")
    why = page_missing(pathlib.Path(daemon_binary()).resolve().parent)
    if why:
        pytest.skip(why)
    pytest.importorskip("selenium", reason="python3-selenium is not installed")
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not os.access(tool, os.X_OK):
            pytest.skip(f"{tool} not found: install Debian's chromium and chromium-driver")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = Daemon(locales=2, token=TOKEN, extra_args=["--http-endpoint", f"127.0.0.1:{port}"])
    import h5ark
    matrix = np.arange(12 * 9, dtype=np.float64).reshape(12, 9) * 0.5 - 7
    with h5py.File(d.data_dir / "viewer.h5", "w") as f:
        f["matrix"] = matrix
        f["matrix"].attrs["units"] = "kelvin"
        f["line"] = np.sin(np.linspace(0, 6, 50))
        # a stack of images: h5web asks for one image at a time (selection "I,:,:")
        f["stack"] = np.arange(4 * 6 * 5, dtype=np.int32).reshape(4, 6, 5) + 1000
        f.attrs["experiment"] = "cryo-run-17"
        f["temperature"] = 77.25
        f["sample"] = "graphene flake"
    c = h5ark.connect(d.endpoint, token=TOKEN, timeout=60)
    c.to_hdf({"names": c.array(np.array(["alpha", "beta", "gamma"]))}, "ark.h5",
             file_type="single")
    c.close()
    yield d, f"http://127.0.0.1:{port}", matrix
    d.cleanup()


def chromium():
    """Headless Chromium through chromedriver, as the page tests drive it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    # software WebGL (SwiftShader) draws h5web's plots without a GPU
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1280,900", "--enable-unsafe-swiftshader", "--use-angle=swiftshader"]:
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(WAIT)
    return driver


@pytest.fixture(scope="module")
def browser(page):
    driver = chromium()
    yield driver
    driver.quit()


def artifact(name):
    """Where a screenshot is kept: test-artifacts in the build tree of the daemon tested."""
    out = pathlib.Path(daemon_binary()).resolve().parent.parent / "test-artifacts"
    out.mkdir(exist_ok=True)
    return out / name


def wait_for(driver, css, what, count=1):
    """The elements matching css once there are at least `count`, else fail saying what
    the page shows."""
    from selenium.webdriver.common.by import By
    deadline = time.time() + WAIT
    while time.time() < deadline:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    body = driver.find_element(By.TAG_NAME, "body").text
    pytest.fail(f"no {what} ({css}) within {WAIT} s; the page shows: {body[:1000]}")


def open_dataset(driver, base, file, path):
    driver.get(f"{base}/?token={TOKEN}&file={file}")
    wait_for(driver, f'[role=treeitem][data-path="{path}"]', f"{path} in the explorer")[0].click()


def test_the_page_lists_the_files_and_needs_the_token(page, browser):
    from selenium.webdriver.common.by import By
    d, base, _ = page
    browser.get(f"{base}/")
    wait_for(browser, "form.h5ark-token", "the token form")
    assert "requires a token" in browser.find_element(By.TAG_NAME, "body").text
    browser.find_element(By.CSS_SELECTOR, "form.h5ark-token input").send_keys(TOKEN)
    browser.find_element(By.CSS_SELECTOR, "form.h5ark-token button").click()
    options = wait_for(browser, "select[aria-label=File] option", "the file list", count=3)
    assert [o.text for o in options[1:]] == ["ark.h5", "viewer.h5"]


def body_shows(driver, text, what):
    from selenium.webdriver.common.by import By
    deadline = time.time() + WAIT
    while text not in driver.find_element(By.TAG_NAME, "body").text:
        if time.time() > deadline:
            shown = driver.find_element(By.TAG_NAME, "body").text
            pytest.fail(f"{what} ({text!r}) is not shown; the page shows: {shown[:1000]}")
        time.sleep(0.1)


def test_the_root_groups_attributes_are_shown(page, browser):
    d, base, _ = page
    browser.get(f"{base}/?token={TOKEN}&file=viewer.h5")
    # the file opens on its root group, whose attributes h5web's Inspect view lists
    from selenium.webdriver.common.by import By
    wait_for(browser, '[role=treeitem][data-path="/"]', "the root in the explorer")
    body_shows(browser, "Inspect", "the Inspect tab")
    browser.find_element(By.XPATH, "//button[normalize-space()='Inspect']").click()
    body_shows(browser, "experiment", "the root attribute's name")
    body_shows(browser, "cryo-run-17", "the root attribute's value")
    browser.save_screenshot(str(artifact("viewer-root-attributes.png")))


def test_scalar_datasets_show_their_values(page, browser):
    d, base, _ = page
    open_dataset(browser, base, "viewer.h5", "/temperature")
    body_shows(browser, "77.25", "the scalar number")
    browser.save_screenshot(str(artifact("viewer-scalar.png")))
    open_dataset(browser, base, "viewer.h5", "/sample")
    body_shows(browser, "graphene flake", "the scalar string")


def test_a_dataset_shows_its_values_and_a_plot(page, browser):
    from selenium.webdriver.common.by import By
    d, base, matrix = page
    open_dataset(browser, base, "viewer.h5", "/matrix")
    # the default view of a 2-D dataset: a heatmap on a WebGL canvas
    canvas = wait_for(browser, "canvas", "the heatmap's canvas")[0]
    time.sleep(1)  # the first frames
    shot = artifact("viewer-heatmap.png")
    browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    assert canvas.size["width"] > 100 and canvas.size["height"] > 100
    colors = png_colors(canvas.screenshot_as_png)
    assert len(colors) > 20, f"the heatmap looks blank: {len(colors)} colours"
    # its values, as the matrix view shows them (h5web's format: 4 significant digits)
    browser.find_element(By.XPATH, "//button[normalize-space()='Matrix']").click()
    cells = wait_for(browser, "[role=gridcell]", "the matrix's cells", count=9)
    shown = [float(c.text.replace("\u2212", "-")) for c in cells if c.text.strip()]  # U+2212: minus
    assert shown[:9] == matrix[0].tolist() or shown[:9] == matrix[:, 0].tolist()[:9], shown[:9]
    assert -7.0 in shown and set(shown) <= set(matrix.ravel().tolist())
    # the attribute, in the Inspect view
    browser.find_element(By.XPATH, "//button[normalize-space()='Inspect']").click()
    deadline = time.time() + WAIT
    while "kelvin" not in browser.find_element(By.TAG_NAME, "body").text:
        assert time.time() < deadline, "the attribute units=kelvin is not shown"
        time.sleep(0.1)


def test_a_stack_is_shown_one_slice_at_a_time(page, browser):
    from selenium.webdriver.common.by import By
    d, base, _ = page
    open_dataset(browser, base, "viewer.h5", "/stack")
    wait_for(browser, "[role=tab]", "the visualizations", count=3)
    browser.find_element(By.XPATH, "//button[normalize-space()='Matrix']").click()
    cells = wait_for(browser, "[role=gridcell]", "the matrix's cells", count=5)
    shown = {int(float(c.text)) for c in cells if c.text.strip()}
    # the first image only: 1000 .. 1029, nothing of the others
    assert shown and shown <= set(range(1000, 1030)), sorted(shown)
    assert 1000 in shown
    browser.find_element(By.XPATH, "//button[normalize-space()='Heatmap']").click()
    canvas = wait_for(browser, "canvas", "the heatmap's canvas")[0]
    time.sleep(1)
    assert len(png_colors(canvas.screenshot_as_png)) > 20
    browser.save_screenshot(str(artifact("viewer-stack.png")))


def test_h5ark_strings_show_as_strings(page, browser):
    d, base, _ = page
    open_dataset(browser, base, "ark.h5", "/names")
    cells = wait_for(browser, "[role=gridcell]", "the strings' cells", count=3)
    texts = [c.text for c in cells]
    assert [t for t in texts if t in ("alpha", "beta", "gamma")] == ["alpha", "beta", "gamma"]
    browser.save_screenshot(str(artifact("viewer-strings.png")))


def test_build_without_npm_registry_skips_the_page(tmp_path):
    """With npm installed but its registry unreachable (an offline machine, a proxy npm
    does not trust), the build goes on without the page, says why, and this module's tests
    skip saying why."""
    if os.environ.get("H5ARKD_WRAPPER"):
        pytest.skip("a build test: it does not involve the daemon under a tool")
    npm, cmake = shutil.which("npm"), shutil.which("cmake")
    if not npm or not cmake:
        pytest.skip("needs npm and cmake")
    build = tmp_path / "build"
    # refused at once, and no packages in a cache: as a machine that never reached it
    env = {**os.environ, "npm_config_registry": "http://127.0.0.1:9/",
           "npm_config_cache": str(tmp_path / "npm-cache"), "npm_config_fetch_retries": "0"}
    subprocess.run([cmake, "-S", str(REPO), "-B", str(build), "-DH5ARK_WEB=ON"], env=env,
                   check=True, capture_output=True, timeout=300)
    out = subprocess.run([cmake, "--build", str(build), "--target", "h5ark_web"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert out.returncode == 0, out.stdout
    assert "viewer page: npm could not fetch the page's packages from http://127.0.0.1:9/" \
        in out.stdout, out.stdout
    assert "h5arkd is built without the page" in out.stdout, out.stdout
    bindir = build / "server"
    assert not (bindir / "web").exists()
    why = page_missing(bindir)
    assert why.startswith("the viewer page was not built: npm could not fetch") and \
        "ECONNREFUSED" in why, why
    # the next build asks npm no more, and says again that the page is skipped
    again = subprocess.run([cmake, "--build", str(build), "--target", "h5ark_web"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
    assert again.returncode == 0 and "viewer page: skipped: npm could not fetch" in again.stdout
    assert "npm ci" not in again.stdout, again.stdout
