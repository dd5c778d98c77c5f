// What a schedule and a run are, as the pages show them, and the lists they read.
"use strict";

(() => {
  const D = window.duetime;
  const { el, badge, muted, instant, api, query, enc } = D;

  function scheduleStatus(schedule) {
    if (schedule.status) return schedule.status;
    if (schedule.deleted_at) return "deleted";
    if (schedule.quarantine) return "quarantined";
    if (schedule.state && schedule.state.paused) return "paused";
    return "active";
  }

  function zoneOf(schedule) {
    return (schedule && schedule.spec && schedule.spec.time_zone) || "UTC";
  }

  function specText(spec) {
    if (!spec) return "";
    const zone = spec.time_zone ? " (" + spec.time_zone + ")" : "";
    let text = spec.cron ? "cron " + spec.cron + zone
      : spec.every ? "every " + spec.every
      : spec.at ? "at " + spec.at + zone
      : "";
    if (spec.start_at) text += ", from " + instant(spec.start_at);
    if (spec.end_at) text += ", until " + instant(spec.end_at);
    return text;
  }

  function targetText(target) {
    if (!target) return "";
    const where = target.url || target.queue_url || target.function_arn || target.event_bus_name || target.job || "";
    return target.type + (where ? " " + where : "");
  }

  function watchCell(watch) {
    if (!watch) return muted("not judged yet");
    const parts = [badge(watch.status)];
    if (watch.expected_at) parts.push(" ", el("span", { class: "muted nowrap" }, "expects " + instant(watch.expected_at)));
    return el("span", { title: "checked " + watch.checked_at }, parts);
  }

  // A slot created ahead of its time and not run yet: the planner's record of it is
  // `planned` (older stacks say `scheduled`, or `admitted` once queued for its time).
  const WAITING = ["planned", "scheduled", "admitted"];
  function isUpcoming(run) {
    return WAITING.includes(run.status) && Date.parse(run.scheduled_at) > Date.now();
  }

  // A run that has not ended yet, which a person may cancel.
  const FINISHED = ["succeeded", "failed", "expired", "skipped", "cancelled"];
  function isFinished(run) {
    return FINISHED.includes(run.status);
  }

  // The occurrences already created that are still to come, soonest first.
  async function upcomingRuns(id, limit) {
    const path = query("/schedules/" + enc(id) + "/runs", { include: "planned", order: "oldest", since: D.nowIso(), limit });
    const page = await api("GET", path);
    return page.runs.filter(isUpcoming).sort((a, b) => Date.parse(a.scheduled_at) - Date.parse(b.scheduled_at));
  }

  // The newest run that ran or was due to (skipped and cancelled records are not runs).
  const RAN = ["admitted", "running", "retrying", "succeeded", "failed", "expired"];
  async function lastRunOf(schedule) {
    const recent = (schedule.recent_runs || []).find((run) => RAN.includes(run.status));
    if (recent) return recent;
    const path = query("/schedules/" + enc(schedule.id) + "/runs", { status: RAN.join(","), limit: 1 });
    return (await api("GET", path)).runs[0] || null;
  }

  // The newest succeeded run, as the runs record it (the watchdog's verdict carries
  // the last success it saw at its last pass, which can be a minute behind).
  async function lastSuccessOf(schedule) {
    const recent = (schedule.recent_runs || []).find((run) => run.status === "succeeded");
    if (recent) return recent;
    const path = query("/schedules/" + enc(schedule.id) + "/runs", { status: "succeeded", limit: 1 });
    return (await api("GET", path)).runs[0] || null;
  }

  function allSchedules() {
    return D.allPages("/schedules", "schedules");
  }

  Object.assign(D, {
    scheduleStatus, zoneOf, specText, targetText, watchCell, isUpcoming, isFinished,
    upcomingRuns, lastRunOf, lastSuccessOf, allSchedules,
  });
})();
