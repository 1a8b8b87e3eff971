"""A captioner board's rows say who submitted a system, when, with what paper and code, and what its
integrity checks found: on the page (a second line under the name, a flag badge) and in the API
row; private submissions stay their owner's, and a hidden test set's copy flag stays staff's."""

import re

import pytest

from tests.platform.factories import SystemFactory, UserFactory, submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_page_memory")]


def own_words(item) -> str:
    return f"a photograph of scene number {item.pk} outdoors"


@pytest.fixture
def rows(demo_dataset, settings):
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 20
    author, other = UserFactory(username="ada"), UserFactory(username="grace")
    SystemFactory(dataset=demo_dataset, slug="base", name="Base model", is_baseline=True)
    rouge = ["rouge_l"]
    linked = submit(
        author,
        demo_dataset,
        "Linked captioner",
        caption=own_words,
        metrics=rouge,
        paper_url="https://example.org/paper",
        code_url="https://example.org/code",
    )
    copier = submit(author, demo_dataset, "Copier", caption=lambda item: item.references[0].lower(), metrics=rouge)
    private = submit(
        other, demo_dataset, "Secret copier", caption=lambda item: item.references[0], metrics=rouge, public=False
    )
    return {"linked": linked, "copier": copier, "private": private, "author": author, "other": other}


def row_html(page: str, name: str) -> str:
    return next(line for line in page.splitlines() if f">{name}</a>" in line)


def test_the_page_says_who_when_and_with_what_under_the_name(client, demo_dataset, rows):
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    linked = row_html(page, "Linked captioner")
    day = rows["linked"].created_at.date().isoformat()
    meta = re.search(r'<small class="system-meta">(.*?)</small>', linked).group(1)
    assert meta.startswith("by ada · <time datetime=")
    assert f">{day}</time>" in meta
    assert '<a href="https://example.org/paper" rel="noopener nofollow">paper</a>' in meta
    assert '<a href="https://example.org/code" rel="noopener nofollow">code</a>' in meta
    assert "flagged" not in linked  # its own words
    assert "system-meta" not in row_html(page, "Base model")  # the dataset's own: nobody submitted it
    copier = row_html(page, "Copier")
    assert "by ada" in copier
    assert "paper</a>" not in copier
    assert re.search(
        r'<span class="badge flagged" title="Flagged by the integrity checks[^"]*100% of its captions', copier
    )
    # Filtering by a paper still reads the same links.
    only_paper = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?only=paper").content.decode()
    assert "Linked captioner" in only_paper
    assert ">Copier</a>" not in only_paper


def test_the_api_row_says_who_when_and_with_what(client, demo_dataset, rows):
    systems = {s["name"]: s for s in client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()["systems"]}
    linked = systems["Linked captioner"]
    assert linked["submitted_by"] == "ada"
    assert linked["submitted_at"] == rows["linked"].created_at.isoformat()
    assert (linked["paper_url"], linked["code_url"]) == ("https://example.org/paper", "https://example.org/code")
    assert linked["flags"] == []
    assert systems["Base model"]["submitted_by"] is None
    assert systems["Base model"]["submitted_at"] is None
    assert systems["Base model"]["flags"] == []
    copied = systems["Copier"]["flags"]
    assert [flag["flag"] for flag in copied] == ["copies_references"]
    assert copied[0]["share"] == 1.0
    assert copied[0]["words"].startswith("100% of its captions are a reference caption of their image")
    download = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?download=json").json()
    assert {s["name"]: s["flags"] for s in download["systems"]} == {n: s["flags"] for n, s in systems.items()}


def test_a_private_submission_stays_its_owners(client, demo_dataset, rows):
    board = f"/datasets/{demo_dataset.slug}/leaderboard/"
    api = f"/api/v1/leaderboards/{demo_dataset.slug}/"
    for viewer in (None, rows["author"]):  # anyone, and another submitter
        if viewer is not None:
            client.force_login(viewer)
        page = client.get(board).content.decode()
        assert "Secret copier" not in page
        assert "grace" not in page
        names = [s["name"] for s in client.get(api).json()["systems"]]
        assert "Secret copier" not in names
        assert "Copier" in names
    client.force_login(rows["other"])
    secret = row_html(client.get(board).content.decode(), "Secret copier")
    assert "by grace" in secret
    assert 'class="badge private"' in secret
    assert 'class="badge flagged"' in secret
    system = next(s for s in client.get(api).json()["systems"] if s["name"] == "Secret copier")
    assert system["submitted_by"] == "grace"
    assert system["flags"][0]["flag"] == "copies_references"


def test_on_a_hidden_test_set_the_copy_flag_is_staffs(client, demo_dataset, rows):
    demo_dataset.references_hidden = True
    demo_dataset.save(update_fields=["references_hidden"])
    api = f"/api/v1/leaderboards/{demo_dataset.slug}/"
    card = f"/api/v1/submissions/{rows['copier'].pk}/results/"
    anyone = next(s for s in client.get(api).json()["systems"] if s["name"] == "Copier")
    assert anyone["flags"] == []
    assert client.get(card).json()["flags"] == []
    assert "badge flagged" not in row_html(
        client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode(), "Copier"
    )
    client.force_login(UserFactory(username="staff", is_staff=True))
    staff = next(s for s in client.get(api).json()["systems"] if s["name"] == "Copier")
    assert [flag["flag"] for flag in staff["flags"]] == ["copies_references"]
    assert [flag["flag"] for flag in client.get(card).json()["flags"]] == ["copies_references"]


def test_the_system_page_shows_who_when_links_and_flags(client, demo_dataset, rows):
    linked = client.get(f"/datasets/{demo_dataset.slug}/systems/{rows['linked'].system.slug}/").content.decode()
    assert "submitted by ada on" in linked
    assert 'href="https://example.org/paper"' in linked
    assert 'id="integrity-flags"' not in linked
    copier = client.get(f"/datasets/{demo_dataset.slug}/systems/{rows['copier'].system.slug}/").content.decode()
    assert 'id="integrity-flags"' in copier
    assert 'data-flag="copies_references"' in copier
