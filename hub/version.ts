// The version the hub reports (svc/hub/state, Home Assistant's device registry). A constant, not
// a read of package.json: the bundled hub (cli/build) ships without it. A test keeps the two equal.
export const SVC_VERSION = '0.1.0'
