// The browse page: the filters start folded (good on a phone); on a wide screen they open.
const more = document.querySelector('details.more')
if (more && window.matchMedia('(min-width: 48rem)').matches) more.open = true
