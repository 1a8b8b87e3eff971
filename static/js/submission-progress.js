// A submission's status page: polls its progress (URL in #progress's data-progress-url) until the
// scoring is final, then reloads the page to show the scores.
(function () {
  "use strict";
  const table = document.getElementById("progress");
  const url = table && table.dataset.progressUrl;
  if (!url) { return; }
  function poll() {
    fetch(url, {headers: {"Accept": "application/json"}}).then(r => r.json()).then(data => {
      document.getElementById("submission-status").textContent = data.status === "done" ? "finished" : data.status;
      const count = document.querySelector("#progress-total .count");
      if (count && typeof data.total === "number") { count.textContent = data.done + " of " + data.total; }
      const body = table.querySelector("tbody");
      body.replaceChildren(...data.metrics.map(job => {
        const row = document.createElement("tr");
        row.dataset.metric = job.metric;
        const note = job.error || (job.batches_ahead ? job.batches_ahead + " batch(es) ahead in the queue" : "");
        for (const [cls, text] of [["", job.name], ["state", job.status], ["num done", job.done + " / " + job.total], ["note", note]]) {
          const cell = document.createElement("td"); cell.className = cls; cell.textContent = text; row.appendChild(cell);
        }
        return row;
      }));
      if (data.final) { window.location.reload(); } else { setTimeout(poll, 1500); }
    }).catch(() => setTimeout(poll, 5000));
  }
  poll();
})();
