"""Campaign pages: the list, a campaign's results, the annotation page, staff's form, the export."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import Count, Q
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from campaigns import selectors
from campaigns.forms import CampaignForm
from campaigns.models import Annotation, Campaign
from campaigns.pictures import dataset_pictures, picture_served, task_picture_shown
from campaigns.rubrics import dimension_of
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import may_annotate, task_next
from campaigns.services.creation import (
    CampaignSpec,
    campaign_board_set,
    campaign_create,
    campaign_status_set,
    campaign_systems_allowed,
)
from campaigns.services.exports import campaign_export_lines
from campaigns.services.identity import RESEMBLANCE_WORDS, address_seen, resemblance_named
from campaigns.services.reach import annotator_reach, campaign_reach
from catalog.models import Dataset, System
from catalog.visibility import references_visible
from plumbing import storage
from plumbing.limits import client_address, limited
from plumbing.refusals import FormPage, refusal_noted


def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = selectors.campaigns_visible(request.user)
    return render(request, "campaigns/list.html", {"campaigns": campaigns})


def _campaign(request: HttpRequest, slug: str) -> Campaign:
    return get_object_or_404(Campaign.objects.visible_to(request.user).select_related("dataset"), slug=slug)


def campaign_detail(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    systems = selectors.campaign_systems_shown(campaign, request.user)
    results = selectors.campaign_results(campaign, request.user)
    people = []
    for system in systems:
        cell = (results or {}).get("people", {}).get(str(system.pk))
        people.append((system, cell))
    people.sort(key=lambda pair: -(pair[1]["value"]) if pair[1] else float("inf"))
    counts = Annotation.objects.filter(selectors.counted_q(), campaign=campaign).aggregate(
        answered=Count("id", filter=Q(status=Annotation.Status.ANSWERED, decoy__isnull=True)),
        gold=Count("id", filter=Q(status=Annotation.Status.ANSWERED, decoy__isnull=False)),
    )
    organiser = selectors.may_organise(campaign, request.user)
    rubric = [dimension_of(data) for data in campaign.rubric]
    agreement = [
        (name, (results or {}).get("agreement", {}).get(key))
        for key, name in [*((d.key, d.name) for d in rubric), ("mean", "Mean of the dimensions")]
    ]
    context = {
        "campaign": campaign,
        "rubric": rubric,
        "people": people,
        "results": results,
        "agreement": agreement if not campaign.is_arena else [],
        "counts": counts,
        "cannot_annotate": may_annotate(campaign, request.user),
        "judgments_shown": references_visible(campaign.dataset, request.user),
        # Blind annotation: while it is open, the answers (captions with their images and systems)
        # and the live split of gold checks from answers are the organisers'.
        "export_shown": references_visible(campaign.dataset, request.user)
        and (organiser or campaign.status != Campaign.Status.OPEN),
        "organiser": organiser,
        "board_problem": selectors.board_status(campaign),
        "pictures": dataset_pictures(campaign.dataset),
        # Who can be given what, and why not: the organiser's (it names accounts).
        "reach": campaign_reach(campaign) if organiser else None,
        # Annotators who answer alike (one person behind two accounts?): the organiser's too.
        "resemblance": resemblance_named(campaign) if organiser else None,
        "resemblance_words": RESEMBLANCE_WORDS,
    }
    return render(request, "campaigns/detail.html", context)


def _progress(campaign: Campaign, user) -> dict:
    mine = Annotation.objects.filter(campaign=campaign, annotator=user)
    return {
        "mine": mine.filter(status=Annotation.Status.ANSWERED).count(),
        "skipped": mine.filter(status=Annotation.Status.SKIPPED).count(),
    }


@never_cache
@require_http_methods(["GET", "POST"])
@limited("ratings", "answers", by="user")
def annotate(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    if not request.user.is_authenticated:
        return redirect(f"{reverse('accounts:login')}?next={request.path}")
    if request.method == "GET":  # a POST's address is remembered by campaigns.middleware
        address_seen(user_id=request.user.pk, address=client_address(request))
    page = FormPage(request, "campaigns/annotate.html", {"campaign": campaign})
    chosen = {key[len("dim-") :]: value for key, value in request.POST.items() if key.startswith("dim-")}
    if request.method == "POST":
        try:
            task_id = int(request.POST.get("task", ""))
        except ValueError:
            task_id = 0
        with page.refusals():  # AnswerRefused: 400, the next task with the problems
            annotation_answer(
                annotation_id=task_id,
                annotator=request.user,
                values=chosen,
                winner=request.POST.get("winner", ""),
                skip="skip" in request.POST,
                campaign_id=campaign.pk,
            )
            return redirect("campaigns:annotate", slug=campaign.slug)
    with page.refusals():  # NotAllowed: 403, the page says why and nothing else
        task = task_next(campaign=campaign, annotator=request.user)
        page.context |= {
            "task": task,
            # Each dimension with the value chosen before a refused answer (kept, not asked again).
            "rubric": [(dimension, chosen.get(dimension.key, "")) for dimension in map(dimension_of, campaign.rubric)],
            # Served under the task's own opaque name: nothing on the page names the item or its file.
            "picture": task_picture_shown(task) if task is not None else None,
            "progress": _progress(campaign, request.user),
            # Nothing to give: why, when the rules leave this annotator nothing at all (not merely done).
            "nothing": annotator_reach(campaign, request.user.pk).nothing if task is None else "",
        }
    return page.response()


@never_cache
@require_safe
def task_picture(request: HttpRequest, slug: str, token: str) -> HttpResponseBase:
    """The picture of the viewer's open task, by its opaque name (campaigns.pictures): a stored file
    without its name, or a redirect to its publisher's URL; 404 for any other name or viewer."""
    campaign = _campaign(request, slug)
    served = picture_served(campaign=campaign, user=request.user, token=token)
    if served is None:
        raise Http404("no such picture")
    if served.remote:
        return HttpResponseRedirect(served.remote)
    try:
        response = FileResponse(storage.open_stored(served.stored_path), content_type=served.content_type)
    except FileNotFoundError:
        raise Http404("this file is missing from the file store") from None
    del response["Content-Disposition"]  # the stored name would tell the file
    return response


@staff_member_required
@require_http_methods(["GET", "POST"])
@limited("actions", "campaign changes", by="user")
def campaign_new(request: HttpRequest) -> HttpResponse:
    datasets = Dataset.objects.visible_to(request.user).order_by("title")
    dataset = datasets.filter(slug=request.GET.get("dataset", "")).first()
    if dataset is None:
        return render(request, "campaigns/new.html", {"datasets": datasets})
    systems = System.objects.filter(pk__in=[system.pk for system in campaign_systems_allowed(dataset)])
    form = CampaignForm(request.POST or None, systems=systems.order_by("name"))
    context = {"datasets": datasets, "dataset": dataset, "form": form, "pictures": dataset_pictures(dataset)}
    page = FormPage(request, "campaigns/new.html", context)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        spec = CampaignSpec(
            slug=data["slug"],
            title=data["title"],
            dataset=dataset,
            systems=list(data["systems"]),
            mode=data["mode"],
            rubric_name=data["rubric_name"],
            custom_rubric=data["custom_rubric"],
            description=data["description"],
            ratings_wanted=data["ratings_wanted"],
            audience=data["audience"],
            annotators=data["annotators"],
            gold_rate=data["gold_rate"],
            gold_pass=data["gold_pass"],
            gold_minimum=data["gold_minimum"],
            exclude_flagged=data["exclude_flagged"],
        )
        with page.refusals():
            campaign = campaign_create(spec=spec, created_by=request.user)
            messages.success(request, f"The campaign {campaign.title} is open.")
            return redirect("campaigns:detail", slug=campaign.slug)
    return page.response()


@staff_member_required
@require_POST
@limited("actions", "campaign changes", by="user")
def campaign_status(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign(request, slug)
    wanted = request.POST.get("status", "")
    if wanted not in Campaign.Status.values:
        return HttpResponse("status: open or closed", status=400, content_type="text/plain")
    with refusal_noted(request, before=f"The campaign stays {campaign.status}: ", after="."):
        campaign_status_set(campaign=campaign, status=wanted)
        messages.success(request, f"The campaign is {wanted}.")
    return redirect("campaigns:detail", slug=campaign.slug)


@staff_member_required
@require_POST
@limited("actions", "campaign changes", by="user")
def campaign_board(request: HttpRequest, slug: str) -> HttpResponse:
    """Staff: choose the campaign for its dataset's board's people column (`on_board=1`), or stop."""
    campaign = _campaign(request, slug)
    chosen = request.POST.get("on_board") == "1"
    campaign_board_set(campaign=campaign, on_board=chosen)
    if chosen:
        messages.success(request, "Chosen for the board's people column: it is shown there once it has enough answers.")
    else:
        messages.success(request, "No longer the board's people column: the dataset's own judgments are shown.")
    return redirect("campaigns:detail", slug=campaign.slug)


def campaign_export(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    campaign = _campaign(request, slug)
    if not references_visible(campaign.dataset, request.user):  # a hidden test set's judgments are staff's
        raise Http404("this campaign's answers are not published")
    if campaign.status == Campaign.Status.OPEN and not selectors.may_organise(campaign, request.user):
        # Blind annotation: its answers name each caption's image and system (docs/human-evaluation.md).
        raise Http404("this campaign's answers are published when it closes")
    response = StreamingHttpResponse(campaign_export_lines(campaign), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}.jsonl"'
    return response
