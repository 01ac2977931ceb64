// Preloaded into Node-RED (`node -r`): TCP_NODELAY on every socket it opens, as the hub sets on
// its own (hub/broker/no-delay.ts), so both sides are compared without Nagle's 40 ms stalls.
const net = require('node:net')
const connect = net.createConnection
net.createConnection = function (...args) {
  const socket = connect.apply(this, args)
  socket.setNoDelay(true)
  return socket
}
net.connect = net.createConnection
