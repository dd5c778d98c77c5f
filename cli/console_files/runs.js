// Runs as tables: each with its attempts below it, Retry when it failed, Cancel while
// it has not ended; and a schedule's versions.
"use strict";

(() => {
  const D = window.duetime;
  const { el, replace, muted, badge, when, instant, seconds, table, pre, api, enc } = D;

  function attemptsTable(run) {
    const log = run.attempts_log;
    if (!Array.isArray(log)) return muted("This API does not serve the attempts of a run yet.");
    return table(["#", "Started", "Finished", "Outcome", "HTTP", "Error", "Wait before next"],
      log.map((a) => el("tr", {},
        el("td", {}, String(a.number)),
        el("td", {}, when(a.started_at)),
        el("td", {}, a.finished_at ? instant(a.finished_at) : ""),
        el("td", {}, a.outcome ? badge(a.outcome) : ""),
        el("td", {}, a.status_code === null || a.status_code === undefined ? "" : String(a.status_code)),
        el("td", { class: "name" }, a.error || ""),
        el("td", {}, seconds(a.wait_s)))),
      "No attempt yet.");
  }

  function retryButton(run) {
    if (!["failed", "expired"].includes(run.status)) return null;
    return D.action("Retry", () => api("POST", "/runs/" + enc(run.occurrence_id) + "/retry").then((again) =>
      "Retrying " + run.occurrence_id + ": now " + again.status + "."), { class: "retry", "data-occurrence": run.occurrence_id });
  }

  // Cancel, with a reason, for a run that has not ended. A webhook already called cannot
  // be recalled: the run is marked cancelled and a late answer is ignored.
  function cancelButton(run) {
    if (D.isFinished(run)) return null;
    const button = el("button", { type: "button", class: "cancel", "data-occurrence": run.occurrence_id }, "Cancel");
    button.addEventListener("click", async () => {
      const reason = el("input", { id: "cancel-reason", maxlength: 1000, placeholder: "reason (optional)" });
      const sure = await D.confirmDialog("cancel-dialog", "Cancel this run?",
        "Occurrence " + run.occurrence_id + " (" + run.status + ", due " + instant(run.scheduled_at) + ") will not run, or run again. " +
        "A target already called is not recalled: its late answer is ignored.", "Cancel run", el("p", {}, reason));
      if (!sure) return;
      button.disabled = true;
      try {
        const text = reason.value.trim();
        const done = await api("POST", "/runs/" + enc(run.occurrence_id) + "/cancel", text ? { reason: text } : undefined);
        D.notice("Cancelled " + run.occurrence_id + ": now " + done.status + ".", false);
      } catch (error) {
        D.notice(D.described(error), true);
      } finally {
        button.disabled = false;
        D.refreshNow();
      }
    });
    return button;
  }

  // Each run is a row; its attempts, result and progress open in a full-width row below it.
  // zoneOf(run): the time zone its times are shown in.
  function runsTable(runs, openRuns, withSchedule, zoneOf) {
    const headings = ["Due", "Kind", "Status", "Version", "Attempts", "Late", "Reason", ""];
    if (withSchedule) headings.unshift("Schedule");
    return table(headings, runs.map((run) => {
      const open = openRuns.has(run.occurrence_id);
      const below = el("tr", { class: "below", "data-attempts-of": run.occurrence_id },
        el("td", { colspan: headings.length },
          el("div", { class: "muted mono" }, run.occurrence_id),
          attemptsTable(run),
          run.result ? [el("div", {}, "Result"), pre(run.result)] : null,
          run.progress ? [el("div", {}, "Progress"), pre(run.progress)] : null));
      below.hidden = !open;
      const toggle = el("button", { type: "button", class: "attempts", "aria-expanded": String(open) },
        open ? "hide attempts" : "attempts");
      toggle.addEventListener("click", () => {
        below.hidden = !below.hidden;
        if (below.hidden) openRuns.delete(run.occurrence_id);
        else openRuns.add(run.occurrence_id);
        toggle.setAttribute("aria-expanded", String(!below.hidden));
        replace(toggle, below.hidden ? "attempts" : "hide attempts");
      });
      return [
        el("tr", { "data-run": run.occurrence_id, "data-status": run.status },
          withSchedule ? el("td", { class: "name" }, D.scheduleLink(run.schedule_id, run.schedule_name || run.schedule_id)) : null,
          el("td", {}, when(run.scheduled_at, zoneOf(run))),
          el("td", {}, run.kind),
          el("td", {}, badge(run.status)),
          el("td", {}, String(run.version)),
          el("td", {}, String(run.attempts)),
          el("td", {}, seconds(run.late_s)),
          el("td", { class: "name" }, run.reason || ""),
          el("td", {}, el("div", { class: "buttons" }, retryButton(run), cancelButton(run), toggle))),
        below,
      ];
    }), "No runs yet.");
  }

  function versionsTable(list, zone) {
    return table(["Version", "Created", "Name", "Changed", ""], list.slice().reverse().map((v) =>
      el("tr", {},
        el("td", {}, String(v.version)),
        el("td", {}, when(v.created_at, zone)),
        el("td", { class: "name" }, v.name),
        el("td", {}, v.version === 1 ? muted("created") : (v.changed || []).join(", ") || muted("nothing")),
        el("td", {}, el("details", {}, el("summary", {}, "definition"),
          pre({ spec: v.spec, policy: v.policy, target: v.target, payload: v.payload }))))),
    "No versions.");
  }

  Object.assign(D, { runsTable, versionsTable, retryButton, cancelButton });
})();
