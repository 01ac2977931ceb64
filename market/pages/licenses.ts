// The three licence kinds a listing may carry (market/API.md, "Listing fields", `license`), each
// with the text a buyer agrees to, at /licenses/<kind>. The API names the kinds and leaves their terms
// open; these short texts are the market's. Pure.
import type { License } from '../../records/listing-fields.ts'
import { type Html, html } from '../../web/html.ts'

interface LicenseText {
  name: string
  /** One line, for the listing page and the meta description. */
  short: string
  may: string[]
  mayNot: string[]
}

export const LICENSE_TEXTS: Record<License, LicenseText> = {
  research: {
    name: 'Research licence',
    short: 'Use the data for non-commercial research and teaching; cite the listing.',
    may: [
      'Use, copy and analyse the data for non-commercial research, teaching and evaluation.',
      'Publish results, statistics, figures and models derived from the data.',
      'Share excerpts of up to 100 lines in a publication, with a link to the listing.',
    ],
    mayNot: [
      'Use the data, or models trained on it, in a product or paid service.',
      'Resell or redistribute the data file as a whole or in large part.',
      'Try to identify people from the data.',
    ],
  },
  commercial: {
    name: 'Commercial licence',
    short: 'Use the data in your own products and services; do not resell the data itself.',
    may: [
      'Everything the research licence allows.',
      'Use the data, and models or statistics derived from it, in products and paid services.',
      'Share the data inside your organisation and with contractors working for you.',
    ],
    mayNot: [
      'Resell, sublicense or publish the data file as a whole or in large part.',
      'Try to identify people from the data.',
    ],
  },
  audit: {
    name: 'Audit licence',
    short: 'Use the data only to check the machine and its operator; keep it confidential.',
    may: [
      'Use the data to audit, inspect or certify the machine, its operator or its records.',
      'Quote the lines needed to support an audit finding, in the audit report.',
    ],
    mayNot: [
      'Use the data for any other purpose, research or commercial.',
      'Share the data beyond the audit team and the audited party.',
      'Keep the data longer than the audit and its legally required retention.',
    ],
  },
}

export const isLicense = (k: string): k is License => Object.hasOwn(LICENSE_TEXTS, k)

export function licenseMain(kind: License): Html {
  const l = LICENSE_TEXTS[kind]
  return html`<p class="crumbs"><a href="/marketplace">← All datasets</a> · <a href="/licenses">All licences</a></p>
<article class="prose">
<h1>${l.name} (<code>${kind}</code>)</h1>
<p>${l.short}</p>
<h2>You may</h2>
<ul>${l.may.map((s) => html`<li>${s}</li>`)}</ul>
<h2>You may not</h2>
<ul>${l.mayNot.map((s) => html`<li>${s}</li>`)}</ul>
<h2>For every licence</h2>
<p>The seller (the owner of the machine agent that listed the data) grants this licence to the account that paid for the listing, from the moment the market unlocks it. The data comes as it is: a row that passes verification proves that the device key signed that line, not that the physical action happened or that a measurement was right.</p>
<p><a href="/marketplace?license=${kind}">Datasets under this licence</a></p>
</article>`
}

export function licensesIndex(): Html {
  return html`<p class="crumbs"><a href="/marketplace">← All datasets</a></p>
<h1>Licences</h1>
<p>Every listing carries one of three licence kinds. Read one before you buy.</p>
<ul class="plain">${(Object.keys(LICENSE_TEXTS) as License[]).map(
    (k) => html`<li><a href="/licenses/${k}">${LICENSE_TEXTS[k].name}</a>: ${LICENSE_TEXTS[k].short}</li>`,
  )}</ul>`
}
