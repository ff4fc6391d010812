// The live conversation: poll the active session's new records and append them; when
// the active session changes (a mode entered or ended), load the page anew.
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
  function tick() {
    fetch('/api/live?after=' + total, { credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (d) {
        if (!d) return;
        if ((d.session_id || '') !== sid) { location.reload(); return; }
        d.records.forEach(function (r) { if (r.index >= total) live.appendChild(line(r)); });
        total = d.total;
        live.setAttribute('data-total', String(total));
        var empty = document.getElementById('live-empty');
        if (empty && total > 0) empty.remove();
        var turns = document.getElementById('turns');
        if (turns) turns.textContent = String(total);
      })
      .catch(function () {})
      .then(function () { setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
