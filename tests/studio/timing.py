"""Times the Data Studio against one API (bench/studio): from submitting the sign-in form to
the articles list rendered, and from clicking an item in that list to its form rendered.

Usage: python timing.py <label> <url> <email> <password> [runs=5]
Each run is a fresh browser context (nothing cached but the browser's HTTP cache of the app's
files, warmed by one untimed run). Prints `<label> login_ms=<median> item_ms=<median>` and
every run's values.
"""

import os
import statistics
import sys
import time

from playwright.sync_api import expect, sync_playwright


def one_run(browser, url, email, password):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{url}/admin/login")
    page.fill("input[type=email]", email)
    page.fill("input[type=password]", password)
    start = time.perf_counter()
    page.click("button[type=submit]")
    rows = page.locator(".v-table tbody tr.table-row")
    page.wait_for_url("**/admin/content/articles**")
    expect(rows.first).to_be_visible()
    login_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    rows.first.click()
    expect(page.locator(".v-form .field input").first).to_be_visible()
    page.wait_for_function("() => [...document.querySelectorAll('.v-form .field input')].some(i => i.value !== '')")
    item_ms = (time.perf_counter() - start) * 1000
    # Back to the list, so the Studio reopens it (its last page) at the next sign-in.
    page.go_back()
    expect(rows.first).to_be_visible()
    page.wait_for_timeout(500)
    context.close()
    return login_ms, item_ms


def main():
    label, url, email, password = sys.argv[1:5]
    runs = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("CDAPI_CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        one_run(browser, url, email, password)  # warm-up, not counted
        results = [one_run(browser, url, email, password) for _ in range(runs)]
        browser.close()
    logins = [r[0] for r in results]
    items = [r[1] for r in results]
    print(f"{label} login_ms={statistics.median(logins):.0f} item_ms={statistics.median(items):.0f} "
          f"(runs: login {', '.join(f'{v:.0f}' for v in logins)}; item {', '.join(f'{v:.0f}' for v in items)})", flush=True)


if __name__ == "__main__":
    main()
