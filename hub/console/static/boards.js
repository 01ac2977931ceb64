// The Boards page's event feed: each board event the hub publishes (server-sent events, topic
// board-event) is added at the top of #board-events as it arrives, the newest `data-max` kept.
// Events are drawn once per animation frame, however fast they come (200 a second is normal for
// a busy board), and written with textContent: a board's text is never markup.

const feed = document.getElementById('board-events')
const status = document.getElementById('feed-status')

function item(e) {
  const li = document.createElement('li')
  const time = document.createElement('time')
  const at = new Date(e.at)
  time.dateTime = at.toISOString()
  time.textContent = at.toISOString().slice(11, 19) + 'Z'
  const board = document.createElement('strong')
  board.textContent = e.board
  const signal = document.createElement('code')
  signal.textContent = e.signal
  const text = document.createElement('code')
  text.className = 'payload'
  text.textContent = e.text
  li.append(time, ' ', board, ' ', signal, ' ', text)
  return li
}

if (feed && typeof EventSource !== 'undefined') {
  const max = Number(feed.dataset.max) || 50
  let queue = []
  let drawing = false
  const draw = () => {
    drawing = false
    const batch = queue.slice(-max)
    queue = []
    const frag = document.createDocumentFragment()
    for (let i = batch.length - 1; i >= 0; i--) frag.append(item(batch[i]))
    feed.prepend(frag)
    while (feed.children.length > max) feed.lastElementChild.remove()
    feed.dataset.count = String(Number(feed.dataset.count || 0) + batch.length)
  }
  const es = new EventSource('/events?topics=board-event')
  es.addEventListener('board-event', (m) => {
    try {
      queue.push(JSON.parse(m.data))
    } catch {
      return
    }
    if (!drawing) {
      drawing = true
      requestAnimationFrame(draw)
    }
  })
  es.addEventListener('open', () => {
    feed.dataset.live = 'open'
    if (status) status.textContent = 'The newest first; the feed follows the hub while this page is open.'
  })
  es.addEventListener('error', () => {
    feed.dataset.live = 'reconnecting'
    if (status) status.textContent = 'Feed paused: reconnecting…'
  })
}
