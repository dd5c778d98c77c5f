// Failed runs of every schedule, and the dead letters, each with Retry.
"use strict";

(() => {
  const D = window.duetime;
  const { el, add, replace, muted, when, table, api, enc } = D;

  const RUN_STATUSES = ["failed", "expired"];
  const SINCE = { "1h": 3600, "24h": 86400, "7d": 604800, all: null };

  function failedPage(main) {
    const since = el("select", { id: "since" }, Object.keys(SINCE).map((k) => el("option", { value: k }, k === "all" ? "all time" : "last " + k)));
    since.value = "24h";
    const runs = el("div", {}, muted("Loading…"));
    const letters = el("div", {}, muted("Loading…"));
    const openRuns = new Set();
    add(main, [
      el("div", { class: "actions" }, el("h1", {}, "Failed runs"), el("label", { class: "muted" }, "scheduled in ", since), D.refreshBox()),
      runs,
      el("h1", { class: "spaced" }, "Dead letters"),
      el("p", { class: "muted" }, "Deliveries the queue gave up on. Retry runs the occurrence again under its own id and idempotency key."),
      letters,
    ]);
    since.addEventListener("change", () => D.refreshNow());
    return async (stale) => {
      const span = SINCE[since.value];
      const params = { status: RUN_STATUSES.join(","), limit: 100 };
      if (span) params.since = D.nowIso(-span);
      const [failed, dead, schedules] = await Promise.allSettled([
        api("GET", D.query("/runs", params)),
        api("GET", D.query("/dead-letters", { limit: 100 })),
        D.allSchedules(),
      ]);
      if (stale()) return;
      const known = new Map(schedules.status === "fulfilled" ? schedules.value.map((s) => [s.id, s]) : []);
      const nameOf = (id) => (known.get(id) || {}).name;
      const zoneOf = (run) => D.zoneOf(known.get(run.schedule_id));
      if (failed.status === "rejected") replace(runs, D.unavailable("the runs of all schedules", failed.reason));
      else {
        const list = failed.value.runs.map((r) => ({ ...r, schedule_name: nameOf(r.schedule_id) }));
        replace(runs, D.runsTable(list, openRuns, true, zoneOf));
      }
      if (dead.status === "rejected") replace(letters, D.unavailable("dead letters", dead.reason));
      else replace(letters, lettersTable(dead.value.dead_letters, nameOf, zoneOf));
    };
  }

  function lettersTable(list, nameOf, zoneOf) {
    return table(["Dead-lettered", "Schedule", "Occurrence", "Reason", "Receives", "Message", ""], list.map((d) =>
      el("tr", { "data-dead-letter": d.id },
        el("td", {}, when(d.dead_lettered_at, zoneOf(d))),
        el("td", { class: "name" }, d.schedule_id ? D.scheduleLink(d.schedule_id, nameOf(d.schedule_id) || d.schedule_id) : muted("unknown")),
        el("td", { class: "mono" }, d.occurrence_id || ""),
        el("td", { class: "name" }, d.reason),
        el("td", {}, String(d.receive_count)),
        el("td", {}, el("details", {}, el("summary", {}, "body"), D.textBlock(d.body))),
        el("td", {}, d.occurrence_id ? D.action("Retry", () => api("POST", "/runs/" + enc(d.occurrence_id) + "/retry").then((again) =>
          "Retrying " + d.occurrence_id + ": now " + again.status + "."), { class: "retry", "data-occurrence": d.occurrence_id }) : null))),
    "No dead letters.");
  }

  D.failedPage = failedPage;
})();
