// A schedule's page: what it is, what comes next, what it did; and every change a person
// makes to it (pause, resume, trigger, edit, backfill, rotate its secret, delete).
"use strict";

(() => {
  const D = window.duetime;
  const { el, add, replace, muted, badge, when, instant, seconds, table, dl, pre, api, enc } = D;

  // A webhook signing secret, shown once: when the schedule is created or its secret rotated.
  function secretBox(secret, rotated) {
    const code = el("code", { id: "webhook-secret" }, secret);
    const copy = el("button", { type: "button", id: "copy-secret" }, "Copy");
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(secret);
        replace(copy, "Copied");
      } catch (error) {
        getSelection().selectAllChildren(code); // no clipboard here: selected, for Ctrl-C
        replace(copy, "Selected: press Ctrl-C");
      }
    });
    return el("div", { class: "secret" },
      el("strong", {}, rotated ? "New webhook signing secret: " : "Webhook signing secret: "), code, " ", copy,
      el("div", {}, el("strong", {}, "It will not be shown again: "),
        rotated ? "store it with your receiver now. The old one still signs for up to 5 minutes, so accept both meanwhile."
          : "store it with your receiver now."));
  }

  function schedulePage(main, id) {
    const title = el("h1", {}, id);
    const status = el("span", {});
    const subtitle = el("div", { class: "muted" });
    const secret = el("div", {});
    if (D.pendingSecret && D.pendingSecret.id === id) {
      add(secret, secretBox(D.pendingSecret.secret, !D.pendingSecret.created));
      D.pendingSecret = null;
    }
    const note = el("input", { id: "pause-note", placeholder: "pause note (optional)", maxlength: 1000 });
    // The note stays where it is while the buttons beside it are refreshed (keeps focus).
    const buttons = el("span", { class: "buttons" });
    const changes = el("span", { class: "buttons" });
    const panel = el("div", {});
    const overview = el("div", { class: "card" }, el("h2", {}, "Overview"));
    const upcoming = el("div", { class: "card" }, el("h2", {}, "Upcoming occurrences"));
    const runs = el("section", {}, el("h2", {}, "Recent runs"));
    const versions = el("section", {}, el("h2", {}, "Versions"));
    add(main, [
      el("p", {}, D.link("#/", "← Schedules")),
      el("div", { class: "actions" }, title, status, D.refreshBox()),
      subtitle,
      secret,
      el("div", { class: "actions" }, note, buttons, el("span", { class: "gap" }), changes),
      panel,
      el("div", { class: "cards" }, overview, upcoming),
      runs,
      versions,
    ]);
    const path = "/schedules/" + enc(id);
    const openRuns = new Set();
    let latest = null;
    let left = false;

    const open = (build) => () => {
      if (latest) replace(panel, build(latest));
    };
    const close = () => replace(panel);

    // --- edit: the form filled with the version read, saved with If-Match: that version.
    function editPanel(s) {
      const form = D.scheduleForm("e", "edit-form", "Save");
      let read = s;
      form.fill(s);
      const heading = el("h2", {});
      const conflict = el("div", { id: "edit-conflict" });
      const showRead = () => replace(heading, "Edit (from version " + read.version + ")");
      showRead();
      const reload = async () => {
        try {
          read = await api("GET", path);
          form.fill(read);
          showRead();
          replace(conflict);
          replace(form.problem);
        } catch (error) {
          replace(form.problem, D.described(error));
        }
      };
      form.form.addEventListener("submit", async (event) => {
        event.preventDefault();
        replace(form.problem);
        replace(conflict);
        let body;
        try {
          body = form.body();
        } catch (error) {
          replace(form.problem, error.message);
          return;
        }
        try {
          const saved = await api("PUT", path, body, { "If-Match": '"' + read.version + '"' });
          if (saved.webhook_secret) add(replace(secret), secretBox(saved.webhook_secret, false));
          close();
          D.notice("Saved: version " + saved.version + ".", false);
          D.refreshNow();
        } catch (error) {
          if (error instanceof D.ApiError && [409, 412, 428].includes(error.status)) {
            replace(conflict, el("div", { class: "conflict" },
              el("strong", {}, "Not saved: this schedule changed since you opened the form (you edited version " + read.version + "). "),
              error.describe(), " ",
              el("button", { type: "button", id: "edit-reload", onclick: reload }, "Reload the latest version"),
              el("div", { class: "muted" }, "Reloading replaces your changes with the latest version; make them again, then save.")));
            D.refreshNow(); // the page around the form shows the version saved meanwhile
          } else {
            replace(form.problem, D.described(error));
          }
        }
      });
      D.previewer(form)();
      // An `every` spec without a start counts from the instant its version is saved.
      const phase = s.spec && s.spec.every && !s.spec.start_at && s.spec.anchor_at
        ? el("p", { class: "note" }, "Saving restarts the interval from the save (no start is set): to keep its phase, set Starts to " +
          s.spec.anchor_at + ".")
        : null;
      return el("div", { class: "card panel", id: "edit-panel" },
        el("div", { class: "actions" }, heading, el("button", { type: "button", onclick: close }, "Close")),
        conflict, phase, form.form);
    }

    // --- backfill: a range, its slots previewed (dry_run), then created.
    function backfillPanel(s) {
      const zone = D.zoneOf(s);
      const from = el("input", { id: "bf-from", value: D.nowIso(-3600), size: 24 });
      const to = el("input", { id: "bf-to", value: D.nowIso(), size: 24 });
      const result = el("div", { id: "bf-result" });
      const range = () => ({ start_at: from.value.trim(), end_at: to.value.trim() });
      const create = () => D.action("Create these runs", async () => {
        const answer = await api("POST", path + "/backfill", range());
        replace(result, muted("Created " + answer.created + " run(s)."));
        return "Backfilled: " + answer.created + " run(s) created.";
      }, { id: "bf-create", class: "primary" });
      const preview = el("button", { type: "button", id: "bf-preview" }, "Preview");
      preview.addEventListener("click", async () => {
        replace(result, muted("…"));
        try {
          const answer = await api("POST", path + "/backfill", { ...range(), dry_run: true });
          const rows = answer.runs.map((r) => el("tr", { "data-slot": r.scheduled_at },
            el("td", {}, when(r.scheduled_at, zone)), el("td", {}, r.kind)));
          replace(result,
            el("p", {}, answer.runs.length ? answer.runs.length + " run(s) would be created:"
              : "Nothing to create: every slot of this range has a run already, or the spec has none in it."),
            rows.length ? table(["Due", "Kind"], rows, "") : null,
            rows.length ? el("div", { class: "actions" }, create()) : null);
        } catch (error) {
          const noPreview = error instanceof D.ApiError && error.status === 422 && error.field === "dry_run";
          replace(result, el("p", { class: "error" }, D.described(error)),
            noPreview ? [muted("This API cannot preview a backfill (an older version). "), create()] : null);
        }
      });
      return el("div", { class: "card panel", id: "backfill-panel" },
        el("div", { class: "actions" }, el("h2", {}, "Backfill"), el("button", { type: "button", onclick: close }, "Close")),
        el("p", { class: "muted" }, "Create the runs of a past range that do not exist yet (never a second copy of one). " +
          "Instants with an offset, both inclusive, the end not in the future."),
        el("div", { class: "actions" }, el("label", { for: "bf-from" }, "From"), from, el("label", { for: "bf-to" }, "to"), to, preview),
        result);
    }

    async function rotate(s) {
      const sure = await D.confirmDialog("rotate-dialog", "Rotate the signing secret?",
        "A new secret signs the deliveries of " + s.name + " from now on; the old one still signs for up to 5 minutes. " +
        "The new one is shown once.", "Rotate secret");
      if (!sure) return null;
      const answer = await api("POST", path + "/rotate-secret");
      add(replace(secret), secretBox(answer.webhook_secret, true));
      return "Rotated: the new secret is shown above, once.";
    }

    async function remove(s) {
      const sure = await D.confirmDialog("delete-dialog", "Delete " + s.name + "?",
        "It stops at once: nothing more is planned, what waits is cancelled. Its runs and versions stay readable. " +
        "This cannot be undone.", "Delete schedule");
      if (!sure) return null;
      await api("DELETE", path);
      left = true; // no more loading of this page: it is gone (404)
      D.flash = "Deleted " + s.name + " (" + s.id + "). Its runs and versions stay readable.";
      location.hash = "#/";
      return null;
    }

    return async (stale) => {
      if (left) return;
      const [schedule, runPage, versionPage, planned] = await Promise.allSettled([
        api("GET", path),
        api("GET", D.query(path + "/runs", { limit: 25 })),
        D.allPages(path + "/versions", "versions"),
        D.upcomingRuns(id, 10),
      ]);
      if (stale()) return;
      const zone = schedule.status === "fulfilled" ? D.zoneOf(schedule.value) : "UTC";
      if (schedule.status === "rejected") {
        replace(overview, el("h2", {}, "Overview"), D.failure(schedule.reason));
        replace(buttons);
        replace(changes);
      } else {
        const s = (latest = schedule.value);
        const state = D.scheduleStatus(s);
        replace(title, s.name);
        document.title = D.shown(s.name) + " · duetime";
        replace(status, badge(state));
        replace(subtitle, s.id + " · version " + s.version + (s.state && s.state.note ? " · paused: " + s.state.note : ""));
        const live = state !== "deleted";
        replace(buttons,
          D.action("Pause", () => {
            const text = note.value.trim();
            return api("POST", path + "/pause", text ? { note: text } : undefined).then(() => "Paused.");
          }, { id: "pause", disabled: !live || s.state.paused }),
          D.action("Resume", () => api("POST", path + "/resume").then(() => "Resumed: planned from now."),
            { id: "resume", disabled: !live || !s.state.paused }),
          D.action("Trigger now", () => api("POST", path + "/trigger").then((run) =>
            "Triggered: occurrence " + run.occurrence_id + " (the next tick admits it)."),
            { id: "trigger", disabled: !live || s.state.paused }),
          s.watch && ["late", "overdue"].includes(s.watch.status)
            ? D.action("Acknowledge", () => api("POST", path + "/acknowledge").then(() => "Acknowledged."), { id: "acknowledge" })
            : null,
        );
        replace(changes,
          el("button", { type: "button", id: "edit", disabled: !live, onclick: open(editPanel) }, "Edit"),
          el("button", { type: "button", id: "backfill", disabled: !live, onclick: open(backfillPanel) }, "Backfill"),
          s.target && s.target.type === "webhook"
            ? D.action("Rotate secret", () => rotate(s), { id: "rotate-secret", disabled: !live }) : null,
          D.action("Delete", () => remove(s), { id: "delete", class: "danger", disabled: !live }),
        );
        const success = await D.lastSuccessOf(s).catch(() => null);
        if (stale()) return;
        renderOverview(overview, s, success);
        renderUpcoming(upcoming, s, planned.status === "fulfilled" ? planned.value : []);
      }
      const inZone = () => zone;
      if (runPage.status === "rejected") replace(runs, el("h2", {}, "Recent runs"), D.failure(runPage.reason));
      else replace(runs, el("h2", {}, "Recent runs"), D.runsTable(runPage.value.runs.filter((r) => !D.isUpcoming(r)), openRuns, false, inZone));
      if (versionPage.status === "rejected") replace(versions, el("h2", {}, "Versions"), D.unavailable("versions", versionPage.reason));
      else replace(versions, el("h2", {}, "Versions"), D.versionsTable(versionPage.value, zone));
    };
  }

  function renderOverview(box, s, success) {
    const policy = s.policy || {};
    const retry = policy.retry || {};
    const watch = s.watch;
    const zone = D.zoneOf(s);
    const tries = retry.max_attempts === 1 ? "1 attempt, no retry" : retry.max_attempts + " attempts, waiting " + retry.base + " doubling to " + retry.cap;
    replace(box, el("h2", {}, "Overview"), dl([
      ["When", D.specText(s.spec)],
      ["Target", D.targetText(s.target)],
      ["Next due", when(s.next_due, zone)],
      ["Last success", success ? el("span", { id: "last-success" }, when(success.finished_at || success.scheduled_at, zone)) : muted("none yet")],
      ["Watch", watch ? [D.watchCell(watch), " ", muted("checked " + instant(watch.checked_at))] : muted("not judged yet")],
      ["Grace", watch && watch.grace_s !== null && watch.grace_s !== undefined ? seconds(watch.grace_s) : policy.grace],
      ["Overdue", policy.overdue + (policy.catchup_window ? " within " + policy.catchup_window : "")],
      ["DST", "gap: " + policy.dst_gap + ", fold: " + policy.dst_fold],
      ["Overlap", policy.overlap],
      ["Retry", tries],
      ["Run timeout", policy.run_timeout],
      ["Quarantine", s.quarantine ? el("span", { class: "error" }, s.quarantine.component + ": " + s.quarantine.reason) : null],
      ["Created", when(s.created_at, zone)],
      ["Updated", when(s.updated_at, zone)],
      ["Deleted", s.deleted_at ? when(s.deleted_at, zone) : null],
      ["Payload", s.payload && Object.keys(s.payload).length ? pre(s.payload) : null],
    ]));
  }

  // What comes next: the occurrences already created (planned ahead of their time), then
  // the next ones the planner will create, with their DST notes; in the schedule's zone
  // with the date, and in UTC.
  function upcomingState(word, version, current) {
    return [badge(word), version !== undefined && version !== current ? muted(" v" + version) : null];
  }

  function renderUpcoming(box, s, planned) {
    const zone = D.zoneOf(s);
    const soon = planned.slice(0, 5);
    // The next ones the planner will create come after every planned one: shown only
    // when all the planned ones are.
    const next = planned.length > soon.length ? [] : (s.next_occurrences || []).slice(0, Math.max(3, 8 - soon.length));
    const rows = [
      ...soon.map((r) =>
        el("tr", { "data-planned": r.occurrence_id, "data-status": r.status },
          el("td", { class: "wrap" }, when(r.scheduled_at, zone)),
          el("td", {}, upcomingState(r.status, r.version, s.version), r.kind === "scheduled" ? null : " " + r.kind),
          el("td", { class: "wrap dst" }),
          el("td", {}, D.cancelButton(r)))),
      ...next.map((o) =>
        el("tr", { "data-next": o.scheduled_at },
          el("td", { class: "wrap" }, when(o.scheduled_at, zone)),
          el("td", {}, muted("next"), o.version !== s.version ? muted(" v" + o.version) : null),
          el("td", { class: "wrap dst" }, o.dst_note ? el("span", { class: "note" }, o.dst_note) : ""),
          el("td", {}))),
    ];
    const paused = s.state && s.state.paused;
    replace(box, el("h2", {}, "Upcoming occurrences"),
      table(["Due", "", "DST", ""], rows, paused ? "None while paused." : "None planned."));
    if (planned.length > soon.length) add(box, el("p", { class: "muted" }, "… and more already planned."));
    const older = s.planned_under_older_versions || [];
    if (older.length) {
      add(box, el("h2", {}, "Planned under older versions"),
        table(["Due", "Version", "Status"], older.map((r) =>
          el("tr", {}, el("td", {}, when(r.scheduled_at, zone)), el("td", {}, String(r.version)), el("td", {}, badge(r.status)))), ""));
    }
  }

  D.schedulePage = schedulePage;
})();
