// The data the end-to-end test starts from, made through the HTTP API as any
// client would: ports and inland facilities, two organizations, a workspace
// between them and a discharge job with load port information, quantity
// (source and destination), quality (one off-spec) and a time log.

export const PORTS = {
  NLRTM: { name: 'Rotterdam', countryCode: 'NL', latitudeDeg: 51, latitudeMin: 55, latitudeNs: 'N', longitudeDeg: 4, longitudeMin: 30, longitudeWe: 'E', geoRegionCode: 'EU-NW' },
  NLAMS: { name: 'Amsterdam', countryCode: 'NL', latitudeDeg: 52, latitudeMin: 22, latitudeSec: 48, latitudeNs: 'N', longitudeDeg: 4, longitudeMin: 54, longitudeSec: 0, longitudeWe: 'E', geoRegionCode: 'EU-NW' },
  NLVLI: { name: 'Vlissingen', countryCode: 'NL', latitudeDeg: 51, latitudeMin: 26, latitudeNs: 'N', longitudeDeg: 3, longitudeMin: 35, longitudeWe: 'E', statusCode: 'INACTIVE', restrictions: 'Closed for dredging works until further notice' },
  BEANR: { name: 'Antwerp', countryCode: 'BE', latitudeDeg: 51, latitudeMin: 13, latitudeNs: 'N', longitudeDeg: 4, longitudeMin: 24, longitudeWe: 'E', geoRegionCode: 'EU-NW' },
  DEHAM: { name: 'Hamburg', countryCode: 'DE', latitudeDeg: 53, latitudeMin: 33, latitudeSec: 7.5, latitudeNs: 'N', longitudeDeg: 9, longitudeMin: 59, longitudeWe: 'E' },
  SGSIN: { name: 'Singapore', countryCode: 'SG', latitudeDeg: 1, latitudeMin: 17, latitudeNs: 'N', longitudeDeg: 103, longitudeMin: 51, longitudeWe: 'E', geoRegionCode: 'AS-SE' },
  USHOU: { name: 'Houston', countryCode: 'US', latitudeDeg: 29, latitudeMin: 45, latitudeNs: 'N', longitudeDeg: 95, longitudeMin: 22, longitudeWe: 'W', geoRegionCode: 'NA-GULF' },
  BRSSZ: { name: 'Santos', countryCode: 'BR', latitudeDeg: 23, latitudeMin: 57, latitudeNs: 'S', longitudeDeg: 46, longitudeMin: 20, longitudeWe: 'W', geoRegionCode: 'SA-E' },
};

export const INLAND_FACILITIES = {
  DEDUI: { name: 'Duisburg inland port', countryCode: 'DE', latitudeDeg: 51, latitudeMin: 26, latitudeNs: 'N', longitudeDeg: 6, longitudeMin: 45, longitudeWe: 'E' },
  BEGNE: { name: 'Ghent tank terminal', countryCode: 'BE', latitudeDeg: 51, latitudeMin: 3, latitudeNs: 'N', longitudeDeg: 3, longitudeMin: 43, longitudeWe: 'E' },
};

async function put(api, path, body) {
  const reply = await api.put(path, body);
  if (reply.status !== 201 && reply.status !== 200) throw new Error(`PUT ${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
}

/** Seeds everything; answers the ids the test navigates to. */
export async function seed(api) {
  for (const [code, body] of Object.entries(PORTS)) await put(api, `/api/rest/1.0/ports/${code}`, body);
  for (const [code, body] of Object.entries(INLAND_FACILITIES)) await put(api, `/api/rest/1.0/inland_facilities/${code}`, body);

  const client = (await api.post('/v2/organizations', { body: { name: 'Northsea Trading', category: 'shipper' } })).body.id;
  const vendor = (await api.post('/v2/organizations', { body: { name: 'Harbour Inspection BV', category: 'inspector' } })).body.id;

  const workspace = (await api.post('/workspaces', {
    description: 'MT Nordic Star, Rotterdam discharge',
    parties: { client: { id: client, xref: 'C-77' }, vendor: { id: vendor, xref: 'V-12' } },
  })).body.id;
  await api.post('/workspaces', {
    description: 'MT Baltic Dawn, Antwerp load',
    parties: { client: { id: client, xref: 'C-78' }, vendor: { id: vendor } },
  });

  const ws = `/workspaces/${workspace}`;
  const job = (await api.post(`${ws}/jobs`, {
    xref: 'J-2026-114',
    refNumber: 'HI-RTM-0114',
    activity: 'discharge',
    eta: '2026-12-01T10:00:00+01:00',
    location: { xref: 'NLRTM', name: 'Rotterdam' },
    transports: [{ name: 'MT Nordic Star' }],
    cargo: { product: { xref: 'GO10', name: 'Gasoil 10ppm' }, quantity: 5000, uom: { name: 'MT' } },
    requested: { quantity: true, quality: true, timelog: true },
    notes: 'Discharge to shore tanks 41 and 42.',
  })).body.id;
  await api.post(`${ws}/jobs`, {
    xref: 'J-2026-115',
    activity: 'load',
    eta: '2026-12-04T06:00:00Z',
    location: { xref: 'BEANR', name: 'Antwerp' },
    transports: [{ name: 'MT Baltic Dawn' }],
    cargo: { product: { name: 'Jet A-1' }, quantity: 12000, uom: { name: 'm3' } },
    requested: { quantity: true },
  });
  await api.patch(`${ws}/jobs/${job}`, { status: 'active' });

  const jb = `${ws}/jobs/${job}`;
  await api.post(`${jb}/load-port-information`, {
    billOfLadingDate: '2026-11-24T16:00:00Z',
    portOfLoading: { xref: 'RUPRI', name: 'Primorsk' },
    measurements: [
      { code: 'GSV', name: 'Gross standard volume', uom: { name: 'm3' }, value: 5921.4 },
      { code: 'MASS', name: 'Mass in air', uom: { name: 'MT' }, value: 4998.7 },
    ],
  });
  const measured = (gsv, mass) => [
    { code: 'GSV', name: 'Gross standard volume', uom: { name: 'm3' }, value: gsv },
    { code: 'MASS', name: 'Mass in air', uom: { name: 'MT' }, value: mass },
  ];
  await api.post(`${jb}/quantity`, {
    date: '2026-12-01T11:30:00Z', direction: 'source', activeShoreTank: false, measurements: measured(5919.8, 4997.2),
    waterMethod: 'ASTM D4006', waterPerc: 0.05, densityMethod: 'ASTM D4052', density15c: 845.2,
    meanTemp: { value: 18.5, uom: { name: 'degC' } }, vcfTable: { name: 'ASTM 54B' },
  });
  await api.post(`${jb}/quantity`, {
    date: '2026-12-02T06:15:00Z', direction: 'destination', activeShoreTank: true, measurements: measured(5911.3, 4990.1),
    waterMethod: 'ASTM D4006', waterPerc: 0.07, densityMethod: 'ASTM D4052', density15c: 845.4,
    meanTemp: { value: 16.0, uom: { name: 'degC' } }, vcfTable: { name: 'ASTM 54B' },
  });
  const quality = [
    { testNumber: 1, test: { xref: 'DEN15', name: 'Density at 15 °C' }, method: { name: 'ASTM D4052' }, uom: { name: 'kg/m3' }, result: 845.2, resultOperator: 'eq', isPassed: true },
    { testNumber: 2, test: { xref: 'SULF', name: 'Sulphur content' }, method: { name: 'ASTM D5453' }, uom: { name: 'mg/kg' }, result: 12.4, resultOperator: 'eq', isOffSpec: true, isRetestNeeded: true, notes: 'Limit 10 mg/kg; retest sample S-89.' },
    { testNumber: 3, test: { xref: 'FLASH', name: 'Flash point' }, method: { name: 'ASTM D93' }, uom: { name: 'degC' }, result: 62, resultOperator: 'gt', isPassed: true },
    { testNumber: 4, test: { xref: 'WATER', name: 'Water content' }, method: { name: 'ASTM D6304' }, uom: { name: 'mg/kg' }, result: 85, resultOperator: 'lte', isPassed: true },
  ];
  for (const q of quality) {
    await api.post(`${jb}/quality`, {
      status: 'confirmed', setNumber: 1, sample: { location: 'Shore tank 41', sealNumber: 'S-88' }, testDate: '2026-12-02T12:00:00Z', ...q,
    });
  }
  const events = [
    ['Vessel arrived', 'event', '2026-12-01T08:40:00Z', null],
    ['NOR tendered', 'event', '2026-12-01T09:00:00Z', null],
    ['Hoses connected', 'event', '2026-12-01T10:10:00Z', '2026-12-01T10:55:00Z'],
    ['Discharge', 'event', '2026-12-01T11:30:00Z', '2026-12-02T04:20:00Z'],
    ['Waiting for shore tank', 'delay', '2026-12-01T17:05:00Z', '2026-12-01T19:35:00Z'],
    ['Hoses disconnected', 'event', '2026-12-02T04:45:00Z', '2026-12-02T05:15:00Z'],
  ];
  // Posted out of order: the console orders the time log by start.
  for (const [name, category, start, end] of [...events].reverse()) {
    await api.post(`${jb}/timelog`, { type: { name }, category, start, ...(end ? { end } : {}), ...(category === 'delay' ? { notes: 'Shore tank 42 not ready' } : {}) });
  }
  return { client, vendor, workspace, job };
}
