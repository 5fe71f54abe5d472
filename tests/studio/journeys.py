"""The Data Studio journeys of tests/tests/studio.rs, driven in Debian's Chromium by Playwright.

Usage: python journeys.py <journey> [key=value ...]
Environment: STUDIO_URL (the API origin; the Studio is at /admin), STUDIO_EMAIL,
STUDIO_PASSWORD, CDAPI_CHROMIUM (the browser), STUDIO_SHOTS (where a failed journey leaves
its screenshot, <journey>.png).

Each journey asserts what the screen shows, then prints one line `RESULT <json>` with what it
saw and did; the Rust test checks the database against it. Any failure exits 1 with the
traceback, after the screenshot.
"""

import json
import os
import re
import sys
import traceback

from playwright.sync_api import expect, sync_playwright

URL = os.environ["STUDIO_URL"].rstrip("/")
TIMEOUT_MS = 30_000


def sign_in(page, email, password):
    """Signs in through the login form; returns once the Studio left the login page."""
    page.goto(f"{URL}/admin/login")
    page.fill("input[type=email]", email)
    page.fill("input[type=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda u: "/login" not in u)


def nav_names(page):
    """The collection names the Content module's navigation lists."""
    items = page.locator(".content-navigation .v-list-item")
    expect(items.first).to_be_visible()
    return [t.strip() for t in items.all_inner_texts()]


def item_count(page):
    """The header's item count text, e.g. `1-25 of 2,000 Items`."""
    count = page.locator("header.header-bar .item-count")
    expect(count).to_be_visible()
    return count.inner_text().strip()


def first_cells(page, column):
    """The texts of `column`'s cells in the table's rows (column: 0-based, after the checkbox)."""
    rows = page.locator(".v-table tbody tr.table-row")
    expect(rows.first).to_be_visible()
    return [r.locator("td.cell:not(.select)").nth(column).inner_text().strip() for r in rows.all()]


def header_columns(page):
    return [t.strip() for t in page.locator(".v-table thead th.cell .name").all_inner_texts()]


def save(page):
    """Clicks the header's save (check) button."""
    button = page.locator("header.header-bar button:has(i[data-icon=check])").first
    expect(button).to_be_enabled()
    button.click()


def journey_sign_in(page, args):
    """1. Sign in, land in Content with the collections listed; a reload stays signed in."""
    sign_in(page, args["email"], args["password"])
    page.wait_for_url(re.compile(r".*/admin/content(/.*)?$"))
    names = nav_names(page)
    page.reload()
    page.wait_for_url(re.compile(r".*/admin/content(/.*)?$"))
    after_reload = nav_names(page)
    assert after_reload == names, (names, after_reload)
    assert "/login" not in page.url, page.url
    return {"collections": names, "url": page.url}


def journey_list(page, args):
    """2. A collection's list: rows, item count, sort by a column, search, filter, next page."""
    sign_in(page, args["email"], args["password"])
    page.goto(f"{URL}/admin/content/articles")
    first_count = item_count(page)
    rows = page.locator(".v-table tbody tr.table-row")
    expect(rows).to_have_count(25)
    title_col = header_columns(page).index("Title")

    # Sort by Title, descending, from the column's menu.
    page.locator(".v-table thead th.cell", has_text="Title").locator(".v-menu-activator").click()
    page.get_by_text("Sort Descending").click()
    expect(rows.first).to_contain_text(args["first_title_desc"])
    sorted_titles = first_cells(page, title_col)

    # Next page.
    page.locator(".v-pagination .v-button.next button").click()
    expect(page.locator("header.header-bar .item-count")).to_contain_text("26-50")
    # The count changes before the rows do: wait for page one's first row to go.
    expect(rows.first).not_to_contain_text(sorted_titles[0].rstrip("…"))
    page_two = first_cells(page, title_col)

    # Search.
    page.locator(".search-input").click()
    page.locator(".search-input input").fill(args["search"])
    expect(page.locator("header.header-bar .item-count")).to_contain_text(args["search_count"])
    searched = first_cells(page, title_col)

    # Filter: status is archived (through the filter menu).
    page.locator(".search-input input").fill("")
    expect(page.locator("header.header-bar .item-count")).to_contain_text(first_count.split(" of ")[-1])
    page.locator(".search-input .icon-filter").click()
    page.locator(".search-input .add-filter").click()
    page.locator(".v-menu-content .v-list-item", has_text="Status").first.click()
    # A field with choices takes its value from a dropdown.
    page.locator(".search-input .filter").get_by_text("Select...").click()
    page.locator(".v-menu-content .v-list-item", has_text="Archived").first.click()
    expect(page.locator("header.header-bar .item-count")).to_contain_text(args["filter_count"])
    # As with the pages, the rows follow the count: give them time to be the filtered ones.
    status_col = header_columns(page).index("Status")
    filtered = first_cells(page, status_col)
    for _ in range(50):
        if all(s == "archived" for s in filtered):
            break
        page.wait_for_timeout(200)
        filtered = first_cells(page, status_col)
    return {
        "count": first_count,
        "sorted": sorted_titles,
        "page_two": page_two,
        "searched": searched,
        "filtered": filtered,
    }


def form_field(page, label):
    """The form field whose label is `label`."""
    return page.locator(".v-form .field", has=page.locator(".field-label", has_text=re.compile(f"^{re.escape(label)}$")))


def journey_edit(page, args):
    """3. Edit a string, a text, a number, a boolean, a date, an M2O (dropdown) and an M2M (add
    and remove), save; the revisions sidebar shows the change."""
    sign_in(page, args["email"], args["password"])
    item = f"{URL}/admin/content/articles/{args['id']}"
    page.goto(item)
    form_field(page, "Title").locator("input").fill(args["title"])
    form_field(page, "Body").locator("textarea").fill(args["body"])
    form_field(page, "Rating").locator("input").fill(args["rating"])
    form_field(page, "Featured").locator("button.v-checkbox").click()

    # The date: the picker's day `day` of the month shown (the item's current month).
    form_field(page, "Published At").locator(".v-input").click()
    page.locator(".v-menu-content .flatpickr-day:not(.prevMonthDay):not(.nextMonthDay)", has_text=re.compile(f"^{args['day']}$")).first.click()
    page.keyboard.press("Escape")

    # The M2O: pick another author in the select drawer.
    form_field(page, "Author").locator(".v-input").click()
    drawer = page.locator(".v-drawer").last
    drawer.locator(".v-table tbody tr.table-row", has_text=args["author"]).first.click()
    drawer.locator("header.header-bar button:has(i[data-icon=check])").click()
    expect(form_field(page, "Author")).to_contain_text(args["author"])

    # The M2M: remove the first tag, add another from the list of existing ones.
    tags = form_field(page, "Tags")
    first_tag = tags.locator(".v-list .v-list-item").first
    removed = first_tag.inner_text().strip()
    first_tag.hover()
    first_tag.locator("i[data-icon=close]").click()
    tags.get_by_text("Add Existing").click()
    drawer = page.locator(".v-drawer").last
    drawer.locator(".v-table tbody tr.table-row", has_text=args["tag"]).first.locator("td.select button").click()
    drawer.locator("button:has(i[data-icon=check])").click()
    expect(tags.locator(".v-list")).to_contain_text(args["tag"])
    save(page)
    page.wait_for_url(re.compile(r".*/admin/content/articles$"))

    # The item's history lists the change.
    page.goto(item)
    page.locator("#sidebar i[data-icon=change_history], aside i[data-icon=change_history]").first.click()
    revisions = page.locator(".sidebar-detail", has=page.locator("i[data-icon=change_history]"))
    expect(revisions).to_contain_text("Updated")
    return {"removed_tag": removed, "revisions": revisions.inner_text()}


def journey_create_delete(page, args):
    """4. Create an item from the form, delete one from its page."""
    sign_in(page, args["email"], args["password"])
    page.goto(f"{URL}/admin/content/articles/+")
    field = lambda label: form_field(page, label)
    field("Title").locator("input").fill(args["title"])
    field("Slug").locator("input").fill(args["slug"])
    field("Status").locator(".v-select, .v-input").first.click()
    page.locator(".v-menu-content .v-list-item", has_text="Draft").first.click()
    save(page)
    page.wait_for_url(re.compile(r".*/admin/content/articles$"))

    page.goto(f"{URL}/admin/content/articles/{args['delete_id']}")
    expect(page.locator(".v-form")).to_be_visible()
    page.locator("header.header-bar .action-delete button").click()
    page.locator(".v-card-actions button", has_text="Delete").click()
    page.wait_for_url(re.compile(r".*/admin/content/articles$"))
    return {"created": args["title"], "deleted": args["delete_id"]}


def journey_users(page, args):
    """5. The User Directory lists users; the signed-in user's profile opens and saves."""
    sign_in(page, args["email"], args["password"])
    page.goto(f"{URL}/admin/users")
    count = item_count(page)
    listed = page.locator(".layout-cards .card, .v-table tbody tr.table-row")
    expect(listed.first).to_be_visible()
    names = [t.strip() for t in listed.all_inner_texts()]
    page.goto(f"{URL}/admin/users/{args['id']}")
    first = form_field(page, "First Name").locator("input")
    expect(first).to_be_visible()
    first.fill(args["first_name"])
    save(page)
    page.wait_for_url(lambda u: args["id"] not in u)
    return {"count": count, "listed": names}


def journey_data_model(page, args):
    """6. Settings > Data Model lists collections, opens one, adds a field through the UI."""
    sign_in(page, args["email"], args["password"])
    page.goto(f"{URL}/admin/settings/data-model")
    rows = page.locator(".collection-item")
    expect(rows.first).to_be_visible()
    names = [t.strip() for t in page.locator(".collection-name").all_inner_texts()]
    assert "articles" in names, names
    page.locator(".collection-name", has_text=re.compile("^articles$")).first.click()
    page.wait_for_url(re.compile(r".*/admin/settings/data-model/articles$"))
    page.get_by_text("Create Field", exact=True).first.click()
    drawer = page.locator(".v-drawer").last
    drawer.locator(".interface", has=page.locator(".name", has_text=re.compile("^Input$"))).first.click()
    key = drawer.locator(".field", has=page.locator(".type-label", has_text="Key")).locator("input").first
    expect(key).to_be_visible()
    key.fill(args["field"])
    save_button = drawer.locator("button", has_text=re.compile(r"^\s*Save\s*$"))
    expect(save_button).to_be_enabled()
    save_button.click()
    # A field is a schema change (DDL, then every replica's snapshot rebuilt) before the
    # Studio lists it: under a loaded CI machine that took over the default 5 s once.
    expect(page.locator(".fields-management").first).to_contain_text(args["field"], timeout=30_000)
    return {"collections": names}


def journey_files(page, args):
    """7. The File Library lists files, uploads an image, shows its thumbnail; the file's page
    replaces it with another image (Replace File)."""
    sign_in(page, args["email"], args["password"])
    page.goto(f"{URL}/admin/files")
    before = item_count(page) if page.locator("header.header-bar .item-count").count() else "0"
    page.locator("header.header-bar a[href$=\"/files/+\"]").click()
    page.locator(".v-card input[type=file]").first.set_input_files(args["file"])
    thumbnail = page.locator(".layout-cards .card img").first
    expect(thumbnail).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=thumbnail.element_handle())
    src = thumbnail.get_attribute("src")
    file_id = re.search(r"/assets/([0-9a-f-]{36})", src).group(1)
    page.goto(f"{URL}/admin/files/{file_id}")
    page.locator(".replace-toggle").first.click()
    with page.expect_response(lambda r: r.request.method == "PATCH" and f"/files/{file_id}" in r.url) as replaced:
        page.locator(".v-card input[type=file]").last.set_input_files(args["replacement"])
    return {"before": before, "thumbnail": src, "replaced": replaced.value.status}


def journey_limited(page, args):
    """8. A role with app access to one collection and some fields sees only those, and cannot
    save what its policies refuse."""
    sign_in(page, args["email"], args["password"])
    page.wait_for_url(re.compile(r".*/admin/content(/.*)?$"))
    names = nav_names(page)
    page.goto(f"{URL}/admin/content/articles/{args['id']}")
    expect(form_field(page, "Title").locator("input")).to_be_visible()
    labels = [t.strip() for t in page.locator(".v-form .field .field-label .field-name").all_inner_texts()]
    status_disabled = form_field(page, "Status").locator(".v-input.disabled, .v-select.disabled, .disabled").count() > 0
    delete_disabled = page.locator("header.header-bar .action-delete button").first.is_disabled()
    form_field(page, "Title").locator("input").fill(args["title"])
    save(page)
    page.wait_for_url(re.compile(r".*/admin/content/articles$"))
    page.goto(f"{URL}/admin/content/authors")
    forbidden = page.locator("main").inner_text()
    return {"collections": names, "labels": labels, "status_disabled": status_disabled, "delete_disabled": delete_disabled, "authors_page": forbidden[:200]}


def journey_shared(page, args):
    """9. A share link opens its item, read-only, after its password and without an account."""
    page.goto(f"{URL}/admin/shared/{args['share']}")
    page.locator(".password input").fill(args["password"])
    page.locator(".shared button").last.click()
    title = form_field(page, "Title").locator("input")
    expect(title).to_be_visible()
    expect(title).to_have_value(args["title"])
    return {"title": title.input_value(), "disabled": title.is_disabled(), "url": page.url}


JOURNEYS = {
    "sign_in": journey_sign_in,
    "list": journey_list,
    "create_delete": journey_create_delete,
    "edit": journey_edit,
    "users": journey_users,
    "data_model": journey_data_model,
    "files": journey_files,
    "limited": journey_limited,
    "shared": journey_shared,
}


def main():
    name = sys.argv[1]
    args = dict(a.split("=", 1) for a in sys.argv[2:])
    shots = os.environ.get("STUDIO_SHOTS", ".")
    os.makedirs(shots, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("CDAPI_CHROMIUM", "/usr/bin/chromium"),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        try:
            result = JOURNEYS[name](page, args)
        except Exception:
            page.screenshot(path=os.path.join(shots, f"{name}.png"))
            traceback.print_exc()
            browser.close()
            sys.exit(1)
        browser.close()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
