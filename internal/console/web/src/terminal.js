// A live terminal (xterm.js) over the console's relay of a conversation's
// attach stream: <div data-terminal-ws="/ws/attach?…">. It is read-only
// until the user presses the "take control" button next to it
// (data-terminal-control="#id-of-terminal"): the button sends
// {"type":"control","on":true} and the relay forwards keystrokes and
// resizes only after it (the relay enforces read-only, not only this page).
// When the stream ends (the conversation paused, the console restarted) it
// reconnects with backoff, so a resumed conversation shows again.
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import "@xterm/xterm/css/xterm.css";

const started = new WeakSet();

export function startTerminals(root, { showError }) {
  root.querySelectorAll("[data-terminal-ws]").forEach((el) => {
    if (started.has(el)) return;
    started.add(el);
    const term = new Terminal({ convertEol: false, cursorBlink: false, fontSize: 13, scrollback: 2000 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el);
    try { fit.fit(); } catch (_) { /* hidden element */ }
    let control = false;
    let ws = null;
    let delay = 500;
    let lastNote = "";
    let everLive = false; // once it showed the CLI, later drops are noted in the terminal only
    const u = new URL(el.dataset.terminalWs, window.location.href);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    const sendJSON = (msg) => { if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg)); };
    const sendSize = () => { if (control) sendJSON({ type: "resize", cols: term.cols, rows: term.rows }); };
    // note writes a status line into the terminal once (not again while it repeats).
    const note = (text) => {
      if (text && text !== lastNote) term.write(`\r\n[${text}]\r\n`);
      lastNote = text;
    };
    const open = () => {
      if (!el.isConnected) return; // swapped out of the page
      ws = new WebSocket(u.toString());
      ws.binaryType = "arraybuffer";
      let said = false; // this connection sent its reason as an error message
      ws.onopen = () => {
        el.classList.remove("disconnected");
        if (control) { sendJSON({ type: "control", on: true }); sendSize(); }
      };
      ws.onmessage = (ev) => {
        if (typeof ev.data === "string") {
          try {
            const msg = JSON.parse(ev.data);
            if (msg.error) { if (!lastNote && !everLive) showError(msg.error); note(msg.error); said = true; }
          } catch (_) { term.write(ev.data); }
          return;
        }
        everLive = true;
        if (lastNote) { lastNote = ""; delay = 500; }
        term.write(new Uint8Array(ev.data));
      };
      ws.onclose = (ev) => {
        el.classList.add("disconnected");
        if (ev.reason && !said) note(ev.reason);
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
    };
    open();
    term.onData((data) => {
      if (control && ws && ws.readyState === WebSocket.OPEN) ws.send(new TextEncoder().encode(data));
    });
    term.onResize(sendSize);
    window.addEventListener("resize", () => { try { fit.fit(); } catch (_) { /* hidden */ } });
    el.terminal = term;
    document.querySelectorAll(`[data-terminal-control="#${el.id}"]`).forEach((btn) => {
      btn.addEventListener("click", () => {
        control = !control;
        sendJSON({ type: "control", on: control });
        sendSize();
        btn.setAttribute("aria-pressed", String(control));
        btn.textContent = control ? "Release control" : "Take control";
        el.classList.toggle("in-control", control);
        if (control) term.focus();
      });
    });
  });
}
