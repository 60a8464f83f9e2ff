// The report page's only script (its sha256 is in the page's Content-Security-Policy).
// It reads the task data from the JSON block and never writes HTML: text only.
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("gate-data").textContent);
  const table = document.getElementById("task-table");
  const tbody = table.tBodies[0];
  const items = data.tasks.map((t, i) => ({
    t,
    row: tbody.rows[i],
    text: [t.task, t.label, ...t.reasons].join("\n").toLowerCase(),
  }));
  const filter = document.getElementById("filter");
  const group = document.getElementById("group");
  const count = document.getElementById("count");

  const inGroup = (t, g) => {
    if (!g) return true;
    if (g === "failing") return t.candidate_rate !== null && t.candidate_rate < 1;
    if (g === "flaky") return t.flaky;
    return t.group === g;
  };

  const apply = () => {
    const q = filter.value.trim().toLowerCase();
    const g = group.value;
    let shown = 0;
    for (const it of items) {
      const ok = (!q || it.text.includes(q)) && inGroup(it.t, g);
      it.row.hidden = !ok;
      if (ok) shown += 1;
    }
    count.textContent = `${shown} of ${items.length} tasks`;
  };
  filter.addEventListener("input", apply);
  group.addEventListener("change", apply);

  let sortKey = null;
  let sortDir = 1;
  const compare = (key, dir) => (a, b) => {
    const x = a.t[key];
    const y = b.t[key];
    if (x === y) return a.t.task < b.t.task ? -1 : 1;
    if (x === null) return 1; // missing values last, whichever the direction
    if (y === null) return -1;
    if (typeof x === "string") return dir * x.localeCompare(y);
    return dir * (x < y ? -1 : 1);
  };
  for (const button of table.querySelectorAll("th button[data-sort]")) {
    button.addEventListener("click", () => {
      const key = button.dataset.sort;
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      for (const th of table.tHead.rows[0].cells) th.removeAttribute("aria-sort");
      button.parentElement.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      for (const it of items.slice().sort(compare(key, sortDir))) tbody.appendChild(it.row);
    });
  }

  const openTarget = (hash) => {
    const el = hash && document.getElementById(hash.slice(1));
    if (el && el.tagName === "DETAILS") el.open = true;
  };
  for (const a of document.querySelectorAll("a.jump")) {
    a.addEventListener("click", () => openTarget(a.hash));
  }
  openTarget(window.location.hash);

  const all = (open) => () => {
    for (const d of document.querySelectorAll("#transcripts details")) d.open = open;
  };
  document.getElementById("expand-all").addEventListener("click", all(true));
  document.getElementById("collapse-all").addEventListener("click", all(false));
  apply();
})();
