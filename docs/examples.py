#!/usr/bin/env python3
"""Regenerates docs/examples.md: one real request and response for every route.

Starts the quayside binary on a fresh data file, walks through every route in
an order that makes each call succeed, and records what went over the wire.
Usage: python3 docs/examples.py [BINARY]   (default target/debug/quayside)
"""

import hashlib
import hmac
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/debug/quayside")
PASSWORD = "example-password"
BOUNDARY = "exampleBoundary"


class Recorder:
    def __init__(self, base):
        self.base = base
        self.key = None
        self.sections = []
        self.heading = None

    def section(self, title, text=""):
        self.sections.append(f"## {title}\n\n{text}" if text else f"## {title}\n")

    def call(self, method, path, body=None, *, form=None, upload=None, headers=None, note=""):
        request_headers = dict(headers or {})
        shown_headers = []
        data = None
        if self.key and not path.startswith("/api/rest/1.0/sessions/") or (self.key and method == "DELETE"):
            request_headers["Authorization"] = f"Bearer {self.key}"
            shown_headers.append("Authorization: Bearer KEY")
        shown_body = ""
        if body is not None:
            data = json.dumps(body).encode()
            request_headers["Content-Type"] = "application/json"
            shown_headers.append("Content-Type: application/json")
            shown_body = json.dumps(body, indent=2, ensure_ascii=False)
        elif form is not None:
            data = form.encode()
            request_headers["Content-Type"] = "application/x-www-form-urlencoded"
            shown_headers.append("Content-Type: application/x-www-form-urlencoded")
            shown_body = form.replace(PASSWORD, "PASSWORD")
        elif upload is not None:
            name, content_type, content = upload
            data = (
                f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                f"Content-Type: {content_type}\r\n\r\n"
            ).encode() + content + f"\r\n--{BOUNDARY}--\r\n".encode()
            request_headers["Content-Type"] = f"multipart/form-data; boundary={BOUNDARY}"
            shown_headers.append(f"Content-Type: multipart/form-data; boundary={BOUNDARY}")
            shown_body = (
                f"--{BOUNDARY}\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\n"
                f"Content-Type: {content_type}\n\n{content.decode(errors='replace')}\n--{BOUNDARY}--"
            )
        for name, value in (headers or {}).items():
            shown_headers.append(f"{name}: {value}")
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=request_headers)
        try:
            response = urllib.request.urlopen(request)
        except urllib.error.HTTPError as error:
            response = error
        status = response.status if hasattr(response, "status") else response.code
        raw = response.read()
        wanted = ["content-type", "x-total-count", "etag", "content-range", "content-disposition",
                  "content-length", "allow", "retry-after"]
        response_headers = [f"{h.title()}: {v}" for h, v in response.headers.items() if h.lower() in wanted]
        if response.headers.get("content-type", "").startswith("application/json") and raw:
            parsed = json.loads(raw)
            shown_response = json.dumps(shorten(parsed), indent=2, ensure_ascii=False)
        else:
            parsed = None
            shown_response = raw.decode(errors="replace")
            if len(shown_response) > 300:
                shown_response = shown_response[:300] + "\n... (" + str(len(raw)) + " bytes in all)"
        title = f"### {method} {path_pattern(path)}\n\n"
        lines = [title]
        if note:
            lines.append(note + "\n\n")
        request_text = "\n".join([f"{method} {path.replace(self.key or '-', 'KEY')}"] + shown_headers)
        if shown_body:
            request_text += "\n\n" + shown_body
        lines.append("```http\n" + request_text + "\n```\n\n")
        response_text = "\n".join([f"HTTP/1.1 {status}"] + response_headers)
        if shown_response:
            response_text += "\n\n" + shown_response
        lines.append("```http\n" + response_text + "\n```\n")
        self.sections.append("".join(lines))
        if status >= 500:
            raise SystemExit(f"{method} {path} answered {status}")
        return parsed


PATTERNS = []


def path_pattern(path):
    """The route pattern a concrete path was made from, for the heading."""
    return PATTERNS_BY_PATH.get(path.split("?")[0], path.split("?")[0])


PATTERNS_BY_PATH = {}


def shorten(value):
    """Lists are cut to two items and long strings trimmed, to keep the page readable."""
    if isinstance(value, list):
        items = [shorten(v) for v in value[:2]]
        if len(value) > 2:
            items.append(f"... {len(value) - 2} more")
        return items
    if isinstance(value, dict):
        if "openapi" in value and "paths" in value:
            return {k: (v if k in ("openapi", "info") else "...") for k, v in value.items()}
        return {k: shorten(v) for k, v in value.items()}
    if isinstance(value, str) and len(value) > 120:
        return value[:117] + "..."
    return value


def main():
    work = tempfile.mkdtemp()
    env = dict(os.environ, QUAYSIDE_ADMIN_PASSWORD=PASSWORD, QUAYSIDE_PBKDF2_ITERATIONS="1000")
    # Webhooks go to a receiver of this script on 127.0.0.1, so the server
    # allows private targets, and retries after 200 ms instead of 30 s.
    server = subprocess.Popen(
        [BINARY, "serve", "--listen", "127.0.0.1:0", "--data", os.path.join(work, "examples.db"),
         "--webhook-allow-private", "--webhook-retry-base-ms", "200"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        base = server.stdout.readline().strip().removeprefix("quayside listening on ")
        ACCOUNTS["data"] = os.path.join(work, "examples.db")
        ACCOUNTS["env"] = env
        run(Recorder(base))
    finally:
        server.terminate()
        server.wait()


def alias(pattern, path):
    PATTERNS_BY_PATH[path] = pattern


# Where `add_account` finds the data file and the environment of the server.
ACCOUNTS = {}


def add_account(r, name):
    """An account of a tenant of its own (`quayside user add`), logged in; its key."""
    subprocess.run([BINARY, "user", "add", name, "--data", ACCOUNTS["data"]], input=PASSWORD + "\n",
                   env=ACCOUNTS["env"], text=True, check=True, capture_output=True)
    login = urllib.request.Request(r.base + f"/api/rest/1.0/sessions/{name}",
                                   data=f"password={PASSWORD}".encode(), method="POST",
                                   headers={"Content-Type": "application/x-www-form-urlencoded"})
    return json.loads(urllib.request.urlopen(login).read())["sessionId"]


def invitations(r):
    r.section("Invitations", "Two accounts of two tenants: `northsea` (a shipper) and `harbour` (an inspection "
              "company). A workspace that names another tenant's organization invites that tenant; see "
              "[api.md](api.md#invitations-party-consent). The requests below are made with the key of the "
              "account named in each note.\n")
    admin_key = r.key
    northsea, harbour = add_account(r, "northsea"), add_account(r, "harbour")
    r.key = harbour
    surveyor = r.call("POST", "/v2/organizations", {"body": {"name": "Harbour Survey", "category": "inspector"}},
                      note="harbour: its organization.")
    r.key = northsea
    desk = r.call("POST", "/v2/organizations", {"body": {"name": "Northsea Crude Desk", "category": "shipper"}},
                  note="northsea: its organization.")
    parties = {"client": {"id": desk["id"]}, "vendor": {"id": surveyor["id"]}}
    invited = r.call("POST", "/workspaces", {"description": "MT Baltic Dawn, Antwerp", "parties": parties},
                     note="northsea: names harbour's organization, so the workspace is `pending`.")
    path = f"/workspaces/{invited['id']}"
    alias("/workspaces/{workspace_id}/jobs", f"{path}/jobs")
    r.call("POST", f"{path}/jobs", {"xref": "J-2026-200"},
           note="northsea: no documents before harbour accepts.")
    r.key = harbour
    alias("/workspaces/{workspace_id}", path)
    r.call("GET", path, note="harbour: not visible yet, except as an invitation.")
    alias("/invitations", "/invitations")
    r.call("GET", "/invitations", note="harbour: its pending invitations (older envelopes).")
    alias("/v2/invitations", "/v2/invitations")
    r.call("GET", "/v2/invitations?filter[body.parties.client.id]=" + desk["id"],
           note="harbour: the same on v2, with the v2 list parameters.")
    accept = f"{path}/accept"
    alias("/workspaces/{workspace_id}/accept", accept)
    r.call("POST", accept, note="harbour: accepts; the workspace is `active` for both parties.")
    r.key = northsea
    declined = r.call("POST", "/v2/workspaces", {"body": {"description": "MT Baltic Dawn, Ghent",
                                                          "parties": parties}},
                      note="northsea: a second invitation, on v2.")
    v2_path = f"/v2/workspaces/{declined['id']}"
    r.key = harbour
    v2_decline = f"{v2_path}/decline"
    alias("/v2/workspaces/{workspace_id}/decline", v2_decline)
    r.call("POST", v2_decline, note="harbour: declines; only northsea sees the workspace, as `declined`.")
    r.key = northsea
    v2_accept = f"{v2_path}/accept"
    alias("/v2/workspaces/{workspace_id}/accept", v2_accept)
    r.call("POST", v2_accept, note="northsea: only the invited party answers.")
    third = r.call("POST", "/workspaces", {"description": "MT Baltic Dawn, Terneuzen", "parties": parties},
                   note="northsea: a third invitation.")
    r.key = harbour
    decline = f"/workspaces/{third['id']}/decline"
    alias("/workspaces/{workspace_id}/decline", decline)
    r.call("POST", decline, note="harbour: declines on the older path.")
    r.key = admin_key


# The signature check of docs/api.md ("Verifying a delivery"), run on every
# delivery the receiver below gets.
def verify(secret: str, body: bytes, header: str, tolerance: int = 300) -> bool:
    parts = [part.split("=", 1) for part in header.split(",")]
    timestamp = next((v for k, v in parts if k == "t"), None)
    if timestamp is None or abs(time.time() - int(timestamp)) > tolerance:
        return False
    signed = timestamp.encode() + b"." + body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, v) for k, v in parts if k == "v1")


class Receiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver: fails its first delivery (500), accepts the rest."""

    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append((self.headers["Quayside-Signature"], body))
        self.send_response(500 if len(Receiver.received) == 1 else 204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


WEBHOOK_CURL = """```sh
BASE=http://127.0.0.1:8080; AUTH="Authorization: Bearer $KEY"; JSON="Content-Type: application/json"
curl -s -X POST $BASE/v2/webhooks -H "$AUTH" -H "$JSON" \\
     -d '{"body": {"url": "https://erp.example.com/quayside", "event_types": ["qualityResult.*"]}}'
curl -s $BASE/v2/webhooks -H "$AUTH"
curl -s $BASE/v2/webhooks/$HOOK -H "$AUTH"
curl -s -X PATCH $BASE/v2/webhooks/$HOOK -H "$AUTH" -H "$JSON" -d '{"body": {"active": true}}'
curl -s -X POST $BASE/v2/webhooks/$HOOK/rotate-secret -H "$AUTH"
curl -s "$BASE/v2/webhooks/$HOOK/deliveries?filter%5Bbody.outcome%5D=failed" -H "$AUTH"
curl -s -X POST $BASE/v2/webhooks/$HOOK/deliveries/$DELIVERY/redeliver -H "$AUTH"
curl -s -X DELETE $BASE/v2/webhooks/$HOOK -H "$AUTH"
```
"""


def webhooks(r):
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{receiver.server_address[1]}/quayside"
    r.section("Webhooks", "Deliveries go to a receiver of the generating script that fails the first "
              "attempt; the server ran with `--webhook-allow-private` to reach it on 127.0.0.1. "
              "See [api.md](api.md#webhooks) for signatures, retries and the rules of targets. "
              "The same routes with curl:\n\n" + WEBHOOK_CURL)
    alias("/v2/webhooks", "/v2/webhooks")
    hook = r.call("POST", "/v2/webhooks",
                  {"body": {"url": url, "event_types": ["organization.*", "job.created"],
                            "description": "Our ERP"}},
                  note="The secret is in this answer only (and in rotate-secret's).")
    r.call("POST", "/v2/webhooks", {"body": {"url": "ftp://erp.example.com/in"}},
           note="Refused: not http or https. A host that resolves to a private address is refused the same "
                "way unless the server runs with `--webhook-allow-private`.")
    path = f"/v2/webhooks/{hook['id']}"
    alias("/v2/webhooks/{webhook_id}", path)
    rotate = f"{path}/rotate-secret"
    alias("/v2/webhooks/{webhook_id}/rotate-secret", rotate)
    rotated = r.call("POST", rotate, note="A new secret; the previous one also signs deliveries for 24 hours.")
    r.call("POST", "/v2/organizations", {"body": {"name": "Webhook Demo Lines"}},
           note="A change the webhook is for.")
    deliveries = f"{path}/deliveries"
    alias("/v2/webhooks/{webhook_id}/deliveries", deliveries)
    deadline = time.time() + 20
    while len(Receiver.received) < 2:
        if time.time() > deadline:
            raise SystemExit("the webhook was not delivered")
        time.sleep(0.05)
    for header, body in Receiver.received:
        if not (verify(rotated["body"]["secret"], body, header) and verify(hook["body"]["secret"], body, header)):
            raise SystemExit("a delivery's signature does not verify")
    attempts = None
    while not attempts or len(attempts) < 2:
        time.sleep(0.05)
        attempts = json.loads(urllib.request.urlopen(urllib.request.Request(
            r.base + deliveries, headers={"Authorization": f"Bearer {r.key}"})).read())
    r.call("GET", deliveries, note="Newest first: the 500, then the retry that got through.")
    redeliver = f"{deliveries}/{attempts[0]['id']}/redeliver"
    alias("/v2/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", redeliver)
    r.call("POST", redeliver, note="Sends that change once more, in the webhook's turn; the cursor stays.")
    r.call("PATCH", path, {"body": {"active": False, "description": "Paused for maintenance"}})
    r.call("GET", path)
    r.call("GET", "/v2/webhooks")
    r.call("DELETE", path)
    receiver.shutdown()


def run(r):
    r.section("Sessions")
    alias("/api/rest/1.0/sessions/{username}", "/api/rest/1.0/sessions/admin")
    session = r.call("POST", "/api/rest/1.0/sessions/admin", form=f"password={PASSWORD}")
    r.key = session["sessionId"]

    r.section("Ports and inland facilities", "The same five operations exist under `/api/rest/1.0/inland_facilities`.")
    alias("/api/rest/1.0/ports/{clientCode}", "/api/rest/1.0/ports/NLRTM")
    port = {"name": "Rotterdam", "countryCode": "NL", "latitudeDeg": 51, "latitudeMin": 55, "latitudeNs": "N",
            "longitudeDeg": 4, "longitudeMin": 30, "longitudeWe": "E"}
    r.call("PUT", "/api/rest/1.0/ports/NLRTM", port, note="Creates: 201.")
    r.call("PUT", "/api/rest/1.0/ports/NLRTM", dict(port, generalComments="Europoort"), note="Replaces: 200.")
    r.call("GET", "/api/rest/1.0/ports/NLRTM")
    alias("/api/rest/1.0/ports", "/api/rest/1.0/ports")
    r.call("GET", "/api/rest/1.0/ports?countryCode=NL&name=rotter&page=1&resultsPerPage=25")
    r.call("DELETE", "/api/rest/1.0/ports/NLRTM", note="An active record is deactivated.")
    r.call("DELETE", "/api/rest/1.0/ports/NLRTM", note="An inactive record is removed.")
    alias("/api/rest/1.0/inland_facilities/{clientCode}", "/api/rest/1.0/inland_facilities/DEDUI")
    r.call("PUT", "/api/rest/1.0/inland_facilities/DEDUI", {"name": "Duisburg", "countryCode": "DE"})
    r.call("GET", "/api/rest/1.0/inland_facilities/DEDUI")
    alias("/api/rest/1.0/inland_facilities", "/api/rest/1.0/inland_facilities")
    r.call("GET", "/api/rest/1.0/inland_facilities?countryCode=DE&statusCode=ACTIVE")
    r.call("DELETE", "/api/rest/1.0/inland_facilities/DEDUI")
    alias("/api/rest/1.0/ports/{clientCode}", "/api/rest/1.0/ports/BAD")
    r.call("PUT", "/api/rest/1.0/ports/BAD", {"name": "Bad", "countryCode": "nl"}, note="A validation error.")

    r.section("Organizations (v2)")
    alias("/v2/organizations", "/v2/organizations")
    client = r.call("POST", "/v2/organizations", {"body": {"name": "Northsea Trading", "category": "shipper"}})
    vendor = r.call("POST", "/v2/organizations", {"body": {"name": "Harbour Inspection BV", "category": "inspector"}})
    spare = r.call("POST", "/v2/organizations", {"name": "Spare Org"})
    r.call("GET", "/v2/organizations?name=north&category=shipper")
    org_path = f"/v2/organizations/{client['id']}"
    alias("/v2/organizations/{organization_id}", org_path)
    alias("/v2/organizations/{organization_id}", f"/v2/organizations/{spare['id']}")
    r.call("GET", org_path)
    r.call("PATCH", org_path, {"body": {"name": "Northsea Trading BV"}})

    r.section("Workspaces")
    parties = {"client": {"id": client["id"], "xref": "C-77"}, "vendor": {"id": vendor["id"]}}
    alias("/workspaces", "/workspaces")
    ws = r.call("POST", "/workspaces", {"description": "MT Nordic Star, Rotterdam", "parties": parties})
    r.call("GET", "/workspaces?description=MT%20Nordic%20Star,%20Rotterdam")
    wp = f"/workspaces/{ws['id']}"
    alias("/workspaces/{workspace_id}", wp)
    r.call("GET", wp)
    r.call("PATCH", wp, {"description": "MT Nordic Star, Rotterdam discharge"})
    alias("/v2/workspaces", "/v2/workspaces")
    ws2 = r.call("POST", "/v2/workspaces", {"body": {"description": "Spare", "parties": {"client": {"id": client["id"]}}}})
    r.call("GET", f"/v2/workspaces?filter[body.parties.client.id]={client['id']}&limit=1")
    v2p = f"/v2/workspaces/{ws2['id']}"
    alias("/v2/workspaces/{workspace_id}", v2p)
    r.call("GET", v2p)
    r.call("PATCH", v2p, {"body": {"description": "Spare workspace"}})

    invitations(r)

    r.section("Jobs")
    jobs = f"{wp}/jobs"
    alias("/workspaces/{workspace_id}/jobs", jobs)
    job = r.call("POST", jobs, {"xref": "J-2026-114", "activity": "discharge", "eta": "2026-12-01T10:00:00+01:00",
                                "location": {"xref": "NLRTM", "name": "Rotterdam"},
                                "transports": [{"name": "MT Nordic Star"}],
                                "cargo": {"product": {"xref": "GO10", "name": "Gasoil 10ppm"}, "quantity": 5000,
                                          "uom": {"name": "MT"}},
                                "requested": {"quantity": True, "quality": True}})
    spare_job = r.call("POST", jobs, {"notes": "spare"})
    r.call("GET", f"{jobs}?status=pending&sort=eta:desc")
    jp = f"{jobs}/{job['id']}"
    alias("/workspaces/{workspace_id}/jobs/{job_id}", jp)
    alias("/workspaces/{workspace_id}/jobs/{job_id}", f"{jobs}/{spare_job['id']}")
    r.call("GET", jp)
    r.call("PATCH", jp, {"status": "active", "notes": "Discharge to shore tanks 41 and 42."})

    r.section("Load port information, quantity, quality, time logs")
    kinds = [
        ("load-port-information", "{id}", {"billOfLadingDate": "2026-11-24T16:00:00Z",
                                           "portOfLoading": {"name": "Primorsk"},
                                           "measurements": [{"code": "GSV", "name": "Gross standard volume",
                                                             "uom": {"name": "m3"}, "value": 5921.4}]},
         {"billOfLadingDate": "2026-11-24T18:00:00Z"}),
        ("quantity", "{quantity_id}", {"direction": "source", "date": "2026-12-01T11:30:00Z",
                                       "density15c": 845.2, "vcftable": {"name": "ASTM 54B"}},
         {"api": 35.8}),
        ("quality", "{quality_id}", {"status": "confirmed", "setNumber": 1, "testNumber": 1,
                                     "sample": {"location": "Shore tank 41", "sealNumber": "S-88"},
                                     "test": {"xref": "DEN15", "name": "Density at 15 C"},
                                     "method": {"name": "ASTM D4052"}, "uom": {"name": "kg/m3"},
                                     "result": 845.2, "resultOperator": "eq", "testDate": "2026-12-02T12:00:00Z"},
         {"isPassed": True}),
        ("timelog", "{event_id}", {"type": {"name": "Vessel arrived"}, "category": "event",
                                   "start": "2026-12-01T08:40:00Z"},
         {"end": "2026-12-01T08:40:00Z", "notes": "All fast"}),
    ]
    made = {}
    for segment, id_param, body, patch in kinds:
        collection = f"{jp}/{segment}"
        alias(f"/workspaces/{{workspace_id}}/jobs/{{job_id}}/{segment}", collection)
        doc = r.call("POST", collection, body)
        r.call("GET", collection)
        one = f"{collection}/{doc['id']}"
        alias(f"/workspaces/{{workspace_id}}/jobs/{{job_id}}/{segment}/{id_param}", one)
        r.call("GET", one)
        r.call("PATCH", one, patch)
        made[segment] = one

    r.section("Certificates: many documents at once",
              "An array of quality results or time logs is stored all or none; see "
              "[api.md](api.md#certificates-many-documents-at-once).\n")
    certificate = [
        {"status": "confirmed", "setNumber": 2, "testNumber": 1, "sample": {"location": "Shore tank 42"},
         "test": {"xref": "DEN15"}, "method": {"name": "ASTM D4052"}, "uom": {"name": "kg/m3"}, "result": 845.6},
        {"status": "confirmed", "setNumber": 2, "testNumber": 2, "sample": {"location": "Shore tank 42"},
         "test": {"xref": "SUL", "name": "Sulphur"}, "method": {"name": "ASTM D4294"},
         "uom": {"name": "mg/kg"}, "result": "8.1"},
    ]
    r.call("POST", f"{jp}/quality", certificate,
           note="Two results of one certificate; the second names a new test, created on the way.")
    invalid = [dict(certificate[0], setNumber=1.5), dict(certificate[1], colour="red")]
    r.call("POST", f"{jp}/quality", invalid, note="Every invalid item is reported; nothing was stored.")
    v2_quality = f"/v2/workspaces/{ws['id']}/jobs/{job['id']}/quality-results"
    alias("/v2/workspaces/{workspace_id}/jobs/{job_id}/quality-results", v2_quality)
    r.call("POST", v2_quality, {"body": [dict(certificate[0], setNumber=3)]})
    v2_timelogs = f"/v2/workspaces/{ws['id']}/jobs/{job['id']}/timelogs"
    alias("/v2/workspaces/{workspace_id}/jobs/{job_id}/timelogs", v2_timelogs)
    r.call("POST", v2_timelogs, {"body": [
        {"type": {"name": "Hoses connected"}, "category": "event", "start": "2026-12-01T09:10:00Z"},
        {"type": {"name": "Waiting for shore"}, "category": "delay", "start": "2026-12-01T09:20:00Z",
         "end": "2026-12-01T10:05:00Z"},
    ]})

    r.section("Catalogs and synonyms (older paths)")
    cat = f"{wp}/catalogs/products"
    alias("/workspaces/{workspace_id}/catalogs/{catalog}", cat)
    diesel = r.call("POST", cat, {"name": "Diesel", "xref": "DSL"})
    ulsd = r.call("POST", cat, {"name": "ULSD"})
    r.call("GET", f"{cat}?xref=GO10")
    item = f"{cat}/{diesel['id']}"
    alias("/workspaces/{workspace_id}/catalogs/{catalog}/{id}", item)
    r.call("GET", item)
    r.call("PATCH", item, {"name": "Diesel EN590"})
    gasoil = r.call("GET", f"{cat}?xref=GO10")[0]["id"]
    link = f"{cat}/{gasoil}/synonyms/{diesel['id']}"
    alias("/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms/{synonymRecordId}", link)
    r.call("POST", link)
    alias("/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms", f"{cat}/{gasoil}/synonyms")
    r.call("GET", f"{cat}/{gasoil}/synonyms")
    r.call("GET", link)
    r.call("DELETE", link)

    r.section("Synonyms (v2)")
    v2link = f"/v2/workspaces/{ws['id']}/xrefs/products/{gasoil}/synonyms/{ulsd['id']}"
    alias("/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms/{linked_item_id}", v2link)
    r.call("POST", v2link)
    alias("/v2/workspaces/{workspace_id}/synonyms", f"/v2/workspaces/{ws['id']}/synonyms")
    r.call("GET", f"/v2/workspaces/{ws['id']}/synonyms?xtype=products")
    alias("/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms",
          f"/v2/workspaces/{ws['id']}/xrefs/products/{gasoil}/synonyms")
    r.call("GET", f"/v2/workspaces/{ws['id']}/xrefs/products/{gasoil}/synonyms")
    r.call("DELETE", v2link)

    r.section("Files (older paths) and attachments (v2)")
    files = f"{jp}/files"
    alias("/workspaces/{workspace_id}/jobs/{job_id}/files", files)
    descriptor = r.call("POST", files, upload=("ullage-report.txt", "text/plain", b"Ullage report, tank 41"))
    r.call("GET", files)
    fp = f"{files}/{descriptor['id']}"
    alias("/workspaces/{workspace_id}/jobs/{job_id}/files/{file_id}", fp)
    alias("/workspaces/{workspace_id}/jobs/{job_id}/files/{file_id}/content", f"{fp}/content")
    r.call("GET", fp)
    r.call("GET", f"{fp}/content", headers={"Range": "bytes=0-5"}, note="A single range answers 206.")
    attachments = f"/v2/workspaces/{ws['id']}/documents/{job['id']}/attachments"
    alias("/v2/workspaces/{workspace_id}/documents/{document_id}/attachments", attachments)
    r.call("GET", attachments, note="The file uploaded on the older path, seen as an attachment.")
    attachment = r.call("POST", attachments + "?clientReferenceNumber=C-1&description=Draft%20survey",
                        upload=("survey.pdf", "application/pdf", b"%PDF-1.7 ..."))
    ap = f"{attachments}/{attachment['id']}"
    alias("/v2/workspaces/{workspace_id}/documents/{document_id}/attachments/{attachment_id}", ap)
    alias("/v2/workspaces/{workspace_id}/documents/{document_id}/attachments/{attachment_id}/content", f"{ap}/content")
    r.call("GET", ap)
    r.call("GET", f"{ap}/content")
    r.call("DELETE", ap)
    r.call("DELETE", fp)

    r.section("Deleting")
    for segment in ["timelog", "quality", "quantity", "load-port-information"]:
        r.call("DELETE", made[segment])
    alias("/workspaces/{workspace_id}/catalogs/{catalog}/{id}", item.replace(diesel["id"], ulsd["id"]))
    r.call("DELETE", item.replace(diesel["id"], ulsd["id"]), note="A record no document refers to.")
    r.call("DELETE", f"{jobs}/{spare_job['id']}")
    r.call("DELETE", wp, note="Refused while the workspace holds documents.")
    r.call("DELETE", v2p)
    r.call("DELETE", f"/v2/organizations/{spare['id']}")

    r.section("Changes", "The change log's three feeds. A live stream (`Accept: text/event-stream`) is shown in "
              "[api.md](api.md#changes).\n")
    alias("/v2/changes", "/v2/changes")
    r.call("GET", "/v2/changes?limit=3", note="From the start of the log, three at a time; pass `next` back as `since`.")
    changes_path = f"/v2/workspaces/{ws['id']}/changes"
    alias("/v2/workspaces/{workspace_id}/changes", changes_path)
    r.call("GET", f"{changes_path}?types=qualityResult.*,timelog.deleted&limit=2",
           note="One workspace's changes, only some types.")
    alias("/api/rest/1.0/changes", "/api/rest/1.0/changes")
    head = r.call("GET", "/api/rest/1.0/changes?since=now", note="`since=now`: no changes, and the cursor of the head.")
    r.call("GET", f"/api/rest/1.0/changes?since={head['next']}&wait=1",
           note="Long-poll: nothing came within the second asked for.")
    r.call("GET", "/api/rest/1.0/changes?since=999999",
           note="A cursor outside what the log keeps: list again, then continue from `next`.")

    webhooks(r)

    r.section("Health, OpenAPI, logout")
    alias("/healthz", "/healthz")
    r.call("GET", "/healthz")
    alias("/openapi.json", "/openapi.json")
    r.call("GET", "/openapi.json", note="The OpenAPI 3.1 document (shortened here).")
    alias("/", "/")
    r.call("GET", "/", note="The browser console's page (shortened here); its files are under `/console/`.")
    alias("/console/{file}", "/console/app.css")
    r.call("GET", "/console/app.css", note="One of the console's files (shortened here).")
    r.call("DELETE", "/api/rest/1.0/sessions/admin")

    intro = ("# Examples: one request and response for every route\n\n"
             "Generated by `python3 docs/examples.py` against the real server on a fresh data file; "
             "ids are real UUIDs of that run, the session key is shown as KEY, and long lists are cut "
             "to two items. See [api.md](api.md) for the rules behind each answer.\n\n")
    with open(os.path.join(ROOT, "docs/examples.md"), "w") as out:
        out.write(intro + "\n".join(r.sections))


if __name__ == "__main__":
    main()
