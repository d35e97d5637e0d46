"""Headless Chromium for the page tests (site and trace report): one way to start it, skip or fail."""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator

import pytest

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage")


def headless_chromium(window: str) -> Iterator:
    """Yield a selenium driver (``window`` as "W,H"); skip without Chromium, except in CI, where that fails."""
    if not (CHROMIUM and DRIVER):
        reason = (
            "BROWSER TESTS SKIPPED: chromium and chromedriver are not installed (apt install chromium chromium-driver)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI must provide them")
        warnings.warn(reason, stacklevel=1)  # shows in the warnings summary as well as the skip reason
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (*FLAGS, f"--window-size={window}"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    yield driver
    driver.quit()
