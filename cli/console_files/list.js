// The schedules page: every schedule, searched and filtered, and the create form.
"use strict";

(() => {
  const D = window.duetime;
  const { el, add, replace, muted, badge, when, api, enc } = D;

  function choice(id, label, options) {
    const box = el("select", { id }, el("option", { value: "" }, "any " + label),
      options.map((o) => el("option", { value: o }, o)));
    return box;
  }

  // The filters keep their values across refreshes and pages (until the page reloads).
  const filters = { text: "", status: "", target: "", verdict: "" };

  function filterBar(apply) {
    const text = el("input", { id: "filter-text", type: "search", placeholder: "search name or id", value: filters.text });
    const status = choice("filter-status", "status", ["active", "paused", "ended", "quarantined"]);
    const target = choice("filter-target", "target", ["webhook", "sqs", "lambda", "eventbridge"]);
    const verdict = choice("filter-verdict", "verdict", ["ok", "late", "overdue", "paused", "ended", "unjudged"]);
    status.value = filters.status;
    target.value = filters.target;
    verdict.value = filters.verdict;
    const read = () => {
      Object.assign(filters, { text: text.value, status: status.value, target: target.value, verdict: verdict.value });
      apply();
    };
    for (const box of [text, status, target, verdict]) {
      box.addEventListener("input", read);
      box.addEventListener("change", read);
    }
    return el("div", { class: "actions filters" }, text, status, target, verdict);
  }

  // Whether a row shows under the filters: the text in the name or id (any case), and
  // each chosen value equal to the row's.
  function matches(row) {
    const needle = filters.text.trim().toLowerCase();
    if (needle && !(row.dataset.name.toLowerCase().includes(needle) || row.dataset.schedule.toLowerCase().includes(needle))) return false;
    if (filters.status && row.dataset.status !== filters.status) return false;
    if (filters.target && row.dataset.target !== filters.target) return false;
    if (filters.verdict && row.dataset.verdict !== filters.verdict) return false;
    return true;
  }

  function schedulesPage(main) {
    const body = el("div", {}, el("p", { class: "muted" }, "Loading…"));
    const count = el("span", { class: "muted", id: "filter-count" });
    const apply = () => {
      const rows = [...body.querySelectorAll("tr[data-schedule]")];
      let showing = 0;
      for (const row of rows) {
        row.hidden = !matches(row);
        if (!row.hidden) showing += 1;
      }
      replace(count, rows.length ? "showing " + showing + " of " + rows.length : "");
    };
    // What each row's cells showed at the last refresh, kept until the new answers come.
    const shownBefore = new Map();
    const cell = (id, key, props, fallback) => {
      const before = shownBefore.get(id + " " + key);
      return before ? before.cloneNode(true) : el("td", props, fallback);
    };
    const remember = (id, cells) => {
      for (const [key, node] of Object.entries(cells)) shownBefore.set(id + " " + key, node.cloneNode(true));
    };
    const verdicts = new Map();
    add(main, [
      el("div", { class: "actions" }, el("h1", {}, "Schedules"), D.refreshBox()),
      D.createForm(),
      el("div", { class: "actions" }, filterBar(apply), count),
      body,
    ]);
    return async (stale) => {
      let schedules;
      try {
        schedules = await D.allSchedules();
      } catch (error) {
        if (!stale()) replace(body, D.failure(error));
        return;
      }
      if (stale()) return;
      const rows = schedules.map((schedule) => {
        const id = schedule.id;
        const zone = D.zoneOf(schedule);
        const state = D.scheduleStatus(schedule);
        const last = cell(id, "last", { class: "wrap" }, muted("…"));
        const next = cell(id, "next", { class: "wrap" }, state === "paused" ? muted("paused") : when(schedule.next_due, zone));
        const watch = cell(id, "watch", { class: "wrap" }, muted("…"));
        const status = el("td", {}, badge(state));
        const row = el(
          "tr",
          { "data-schedule": id, "data-name": schedule.name, "data-status": state,
            "data-target": schedule.target ? schedule.target.type : "", "data-verdict": verdicts.get(id) || "unjudged" },
          el("td", { class: "name" }, D.scheduleLink(id, schedule.name), el("div", { class: "muted mono" }, id)),
          status,
          el("td", { class: "wrap" }, D.specText(schedule.spec)),
          next,
          last,
          watch,
        );
        return { schedule, zone, row, last, watch, status, next };
      });
      replace(
        body,
        D.table(
          ["Name", "Status", "When", "Next run", "Last run", "Watch"],
          rows.map((r) => r.row),
          "No schedules yet: create one above, or with `duetime schedules create`.",
        ),
      );
      apply();
      await D.eachLimited(rows, 4, async ({ schedule, zone, row, last, watch, status, next }) => {
        try {
          const detail = await api("GET", "/schedules/" + enc(schedule.id));
          if (stale()) return;
          const state = D.scheduleStatus(detail);
          replace(status, badge(state));
          row.dataset.status = state;
          verdicts.set(schedule.id, detail.watch ? detail.watch.status : "unjudged");
          row.dataset.verdict = verdicts.get(schedule.id);
          apply();
          if (state === "paused") replace(next, muted("paused"));
          else if (state === "ended") replace(next, muted("none: ended"));
          replace(watch, D.watchCell(detail.watch));
          const run = await D.lastRunOf(detail);
          if (stale()) return;
          replace(last, run ? [badge(run.status), " ", when(run.finished_at || run.started_at || run.scheduled_at, zone)] : muted("none yet"));
          const planned = state === "paused" ? [] : await D.upcomingRuns(schedule.id, 1);
          if (stale()) return;
          if (planned.length) replace(next, when(planned[0].scheduled_at, zone));
          remember(schedule.id, { last, next, watch });
        } catch (error) {
          if (!stale()) replace(last, D.failure(error));
        }
      });
    };
  }

  D.schedulesPage = schedulesPage;
})();
