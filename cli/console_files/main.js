// Routing between the pages, and refreshing the one shown.
"use strict";

(() => {
  const D = window.duetime;
  const { el, replace, api } = D;
  const REFRESH_MS = 4000;
  const main = document.getElementById("main");
  const noticeBox = document.getElementById("notice");

  // Each page builds its frame once and gives back the function that loads its data;
  // the data is loaded again every few seconds while "auto-refresh" is on.
  let current = null;
  let generation = 0;
  let autoRefresh = true;

  D.refreshBox = () => {
    const box = el("input", { type: "checkbox", id: "auto-refresh" });
    box.checked = autoRefresh;
    box.addEventListener("change", () => { autoRefresh = box.checked; });
    return el("label", { class: "refresh muted" }, box, " auto-refresh");
  };

  function route() {
    generation += 1;
    const mine = generation;
    const hash = location.hash || "#/";
    main.replaceChildren();
    noticeBox.hidden = true;
    if (D.flash) {
      D.notice(D.flash, false); // what the page before said as it left (a deletion)
      D.flash = null;
    }
    for (const a of document.querySelectorAll("[data-nav]")) a.classList.remove("current");
    let page;
    const match = /^#\/schedules\/([^/]+)$/.exec(hash);
    if (match) {
      page = D.schedulePage(main, decodeURIComponent(match[1]));
    } else if (hash === "#/failed") {
      document.querySelector('[data-nav="failed"]').classList.add("current");
      document.title = "Failed runs · duetime";
      page = D.failedPage(main);
    } else {
      document.querySelector('[data-nav="schedules"]').classList.add("current");
      document.title = "Schedules · duetime";
      page = D.schedulesPage(main);
    }
    current = { load: page, stale: () => mine !== generation, busy: false, again: false };
    refreshNow();
  }

  async function refreshNow(timed) {
    const page = current;
    if (!page) return;
    if (page.busy) {
      if (timed === true) return; // the timer waits for the load under way
      page.again = true; // after an action: load once more when this load ends
      return;
    }
    page.busy = true;
    try {
      do {
        page.again = false;
        await page.load(page.stale);
      } while (page.again && !page.stale());
    } catch (error) {
      if (!page.stale()) D.notice(String(error), true);
    } finally {
      page.busy = false;
    }
  }
  D.refreshNow = () => refreshNow(false);

  async function health() {
    const box = document.getElementById("api-status");
    try {
      const answer = await api("GET", "/health");
      replace(box, "API " + answer.status + " · " + D.instant(answer.time));
    } catch (error) {
      replace(box, el("span", { class: "error" }, "API: " + D.described(error)));
    }
  }

  window.addEventListener("hashchange", route);
  setInterval(() => { if (autoRefresh && !document.hidden && !document.querySelector("dialog[open]")) refreshNow(true); }, REFRESH_MS);
  route();
  health();
})();
