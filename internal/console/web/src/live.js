// Live views over websockets from the console (which follows the
// supervisors' watch and transcript streams): no polling in the browser.
//
//   <ol data-transcript-ws="/ws/transcript?…">   entries appended as they come
//   <div data-watch-ws="/ws/watch?…" data-refresh="#id">  re-fetch the target's hx-get on each event
const started = new WeakSet();

function wsURL(path) {
  const u = new URL(path, window.location.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  return u.toString();
}

// connect opens a websocket and reconnects with backoff; onMessage gets parsed JSON.
function connect(path, onMessage, onStatus) {
  let delay = 250;
  let closed = false;
  const open = () => {
    if (closed) return;
    const ws = new WebSocket(wsURL(typeof path === "function" ? path() : path));
    ws.onopen = () => { delay = 250; onStatus && onStatus(true); };
    ws.onmessage = (ev) => {
      try { onMessage(JSON.parse(ev.data)); } catch (err) { console.warn("live: bad message", err); }
    };
    ws.onclose = () => {
      onStatus && onStatus(false);
      if (!closed) setTimeout(open, delay);
      delay = Math.min(delay * 2, 5000);
    };
  };
  open();
  return () => { closed = true; };
}

export function speakerClass(speaker) {
  const kind = (speaker || "").split(":")[0];
  return "speaker-" + (["human", "agent", "tool", "injected", "mail", "trigger", "unattributed"].includes(kind) ? kind : "other");
}

export function speakerLabel(speaker) {
  if (!speaker) return "";
  const [kind, who] = speaker.split(/:(.*)/s);
  if (kind === "injected") return `injected by monitor ${who}`;
  if (kind === "mail") return `mail from ${who}`;
  if (kind === "trigger") return `trigger ${who}`;
  // A user turn nobody sent: the CLI wrote it into its own session store (never a human's).
  if (kind === "unattributed") return "unattributed (written by the CLI)";
  return speaker;
}

// renderEntry builds one transcript entry with textContent only: transcript
// text is never parsed as HTML.
export function renderEntry(e) {
  const li = document.createElement("li");
  li.className = "entry " + speakerClass(e.speaker);
  li.dataset.cursor = String(e.cursor);
  const who = document.createElement("span");
  who.className = "speaker";
  who.textContent = speakerLabel(e.speaker);
  const text = document.createElement("pre");
  text.className = "text";
  text.textContent = e.text;
  li.append(who, text);
  return li;
}

export function startLive(root, { showError }) {
  root.querySelectorAll("[data-transcript-ws]").forEach((list) => {
    if (started.has(list)) return;
    started.add(list);
    const lastCursor = () => {
      const items = list.querySelectorAll("li[data-cursor]");
      return items.length ? Number(items[items.length - 1].dataset.cursor) : Number(list.dataset.from || 0);
    };
    // Start at the newest entry (the page renders the last page of the transcript).
    list.scrollTop = list.scrollHeight;
    const base = list.dataset.transcriptWs;
    connect(() => `${base}&from=${lastCursor() + 1}`, (msg) => {
      if (msg.error) { showError(msg.error); return; }
      if (msg.cursor <= lastCursor()) return;
      const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
      list.append(renderEntry(msg));
      list.dispatchEvent(new CustomEvent("transcript:entry", { detail: msg, bubbles: true }));
      if (stick) list.scrollTop = list.scrollHeight;
    }, (up) => list.classList.toggle("disconnected", !up));
  });
  root.querySelectorAll("[data-watch-ws]").forEach((el) => {
    if (started.has(el)) return;
    started.add(el);
    let pending = null;
    connect(el.dataset.watchWs, (msg) => {
      if (msg.error) { showError(msg.error); return; }
      // Coalesce bursts of events into one refresh.
      if (pending) return;
      pending = setTimeout(() => {
        pending = null;
        const target = el.dataset.refresh ? document.querySelector(el.dataset.refresh) : el;
        if (target && window.htmx) window.htmx.trigger(target, "refresh");
      }, 100);
    });
  });
}
