// The live conversation: the server pushes the active session's new records
// (/api/live/events, server-sent events) and they are appended; without a stream (no
// EventSource, or the server refused or dropped it) the page asks /api/live every few
// seconds instead. When the active session changes (a mode entered or ended), the page
// loads anew.
(function () {
  var live = document.getElementById('live');
  if (!live) return;
  var sid = live.getAttribute('data-session') || '';
  var total = parseInt(live.getAttribute('data-total') || '0', 10);
  var every = parseInt(live.getAttribute('data-every') || '2000', 10);
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function line(r) {
    var li = el('li', r.failed ? 'failed' : '');
    li.setAttribute('data-index', r.index);
    li.appendChild(el('div', 'who', r.speaker + ' · ' + r.channel + ' · ' + r.timestamp.slice(11, 16)));
    li.appendChild(el('div', 'user', r.user));
    li.appendChild(el('div', 'bot', r.assistant));
    return li;
  }
  // apply one answer; false when the page is being loaded anew
  function apply(d) {
    if ((d.session_id || '') !== sid) { location.reload(); return false; }
    d.records.forEach(function (r) { if (r.index >= total) live.appendChild(line(r)); });
    total = Math.max(total, d.total);
    live.setAttribute('data-total', String(total));
    var empty = document.getElementById('live-empty');
    if (empty && total > 0) empty.remove();
    var turns = document.getElementById('turns');
    if (turns) turns.textContent = String(total);
    return true;
  }
  function tick() {
    fetch('/api/live?after=' + total, { credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (d) { return d ? apply(d) : true; })
      .catch(function () { return true; })
      .then(function (go) { if (go) setTimeout(tick, every); });
  }
  if (!window.EventSource) { setTimeout(tick, every); return; }
  var es = new EventSource('/api/live/events?after=' + total);
  es.onmessage = function (m) {
    try { if (!apply(JSON.parse(m.data))) es.close(); } catch (e) {}
  };
  es.onerror = function () {
    // the browser reconnects by itself after a stream that ended; a refused one
    // (too many streams) closes it: ask instead
    if (es.readyState === EventSource.CLOSED) setTimeout(tick, every);
  };
})();
