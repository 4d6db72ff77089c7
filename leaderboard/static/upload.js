/* The upload page: a model bundle sent in chunks over the uploads API (POST /uploads,
 * PATCH /uploads/{id}?offset=, POST /uploads/{id}/complete), with progress.
 *
 * Resumable: the server keeps every chunk it has received. After a dropped connection
 * the page asks it (GET /uploads/{id}) where to go on from and retries, with a growing
 * wait; after a reload, choosing the same file again finds its open upload in the page's
 * list (same name, size and sha256) and sends only the rest. The sha256 of a file, which
 * the server checks at the end, is remembered per file (name, size, modification time) so
 * that resuming does not hash it again. */
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form) return;
  var data = JSON.parse(document.getElementById("upload-data").textContent);
  var input = document.getElementById("bundle-file");
  var bar = document.getElementById("upload-progress");
  var note = document.getElementById("upload-note");
  var problem = document.getElementById("upload-error");
  var button = document.getElementById("upload-button");
  var HASH_SLICE = 4 * 1024 * 1024;
  var MAX_TRIES = 8;

  function mb(bytes) { return (bytes / 1048576).toFixed(1) + " MB"; }

  function say(text, fraction) {
    note.textContent = text;
    if (fraction != null) bar.value = fraction;
  }

  function fail(text) {
    problem.textContent = text;
    problem.hidden = false;
    button.disabled = false;
  }

  function ApiError(status, detail) { this.status = status; this.message = detail; }

  function detailOf(body, status) {
    var detail = body && body.detail;
    if (Array.isArray(detail)) detail = detail.map(function (d) { return d.msg; }).join("; ");
    return detail || ("The server answered " + status);
  }

  function api(method, url, body) {
    var headers = { Accept: "application/json", "X-CSRF-Token": data.csrf };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(url, {
      method: method, credentials: "same-origin", headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (json) {
        if (!response.ok) throw new ApiError(response.status, detailOf(json, response.status));
        return json;
      });
    });
  }

  /* One chunk, by XMLHttpRequest: fetch reports no upload progress. */
  function sendChunk(upload, file, offset, end) {
    return new Promise(function (resolve, reject) {
      var xhr = new XMLHttpRequest();
      xhr.open("PATCH", "/uploads/" + upload.id + "?offset=" + offset);
      xhr.setRequestHeader("Content-Type", "application/octet-stream");
      xhr.setRequestHeader("Accept", "application/json");
      xhr.setRequestHeader("X-CSRF-Token", data.csrf);
      xhr.upload.onprogress = function (event) {
        var sent = offset + event.loaded;
        say("Sending: " + mb(sent) + " of " + mb(file.size), sent / file.size);
      };
      xhr.onload = function () {
        var json = null;
        try { json = JSON.parse(xhr.responseText); } catch (e) { json = null; }
        if (xhr.status >= 200 && xhr.status < 300) resolve(json);
        else reject(new ApiError(xhr.status, detailOf(json, xhr.status)));
      };
      xhr.onerror = function () { reject(new ApiError(0, "The connection dropped")); };
      xhr.send(file.slice(offset, end));
    });
  }

  function fingerprint(file) {
    return "evalboard-sha256:" + [file.name, file.size, file.lastModified].join(":");
  }

  function hashOf(file) {
    var known = window.localStorage.getItem(fingerprint(file));
    if (known) return Promise.resolve(known);
    var hasher = new window.Sha256();
    var offset = 0;
    function next() {
      if (offset >= file.size) {
        var hex = hasher.hex();
        try { window.localStorage.setItem(fingerprint(file), hex); } catch (e) { /* full */ }
        return Promise.resolve(hex);
      }
      say("Checking the file: " + mb(offset) + " of " + mb(file.size), offset / file.size);
      return file.slice(offset, offset + HASH_SLICE).arrayBuffer().then(function (buffer) {
        hasher.update(new Uint8Array(buffer));
        offset += buffer.byteLength;
        return next();
      });
    }
    return next();
  }

  function wait(ms) { return new Promise(function (resolve) { window.setTimeout(resolve, ms); }); }

  /* Send what the server lacks; after a failure ask it where to go on from. */
  function sendRest(upload, file) {
    var tries = 0;
    function step() {
      if (upload.received >= file.size) return Promise.resolve(upload);
      var end = Math.min(upload.received + upload.chunk_size, file.size);
      return sendChunk(upload, file, upload.received, end).then(function (fresh) {
        upload = fresh;
        tries = 0;
        return step();
      }, function (error) {
        var retryable = error.status === 0 || error.status === 409 || error.status >= 500;
        if (!retryable || ++tries > MAX_TRIES) throw error;
        say("The connection dropped; trying again (" + tries + " of " + MAX_TRIES + ")…");
        return wait(Math.min(1000 * Math.pow(2, tries - 1), 30000))
          .then(function () { return api("GET", "/uploads/" + upload.id); })
          .then(function (fresh) { upload = fresh; return step(); },
                function () { return step(); });
      });
    }
    return step();
  }

  function start(file) {
    return hashOf(file).then(function (sha256) {
      var open = data.open.filter(function (u) {
        return u.filename === file.name && u.size === file.size && u.sha256 === sha256;
      })[0];
      if (open) {
        return api("GET", "/uploads/" + open.id).then(function (upload) {
          say("Going on from " + mb(upload.received) + " of " + mb(file.size) + " already sent.",
              upload.received / file.size);
          return upload;
        });
      }
      return api("POST", "/uploads", {
        task: data.task, filename: file.name, size: file.size, sha256: sha256
      });
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var file = input.files && input.files[0];
    problem.hidden = true;
    if (!file) { fail("Choose a bundle file first."); return; }
    button.disabled = true;
    start(file)
      .then(function (upload) { return sendRest(upload, file); })
      .then(function (upload) {
        say("All " + mb(file.size) + " sent; checking the bundle…", 1);
        return api("POST", "/uploads/" + upload.id + "/complete");
      })
      .then(function (submission) {
        window.localStorage.removeItem(fingerprint(file));
        say("Submitted. Opening its status page…", 1);
        window.location.assign("/ui/submissions/" + submission.id);
      })
      .catch(function (error) {
        fail((error && error.message ? error.message : String(error)) +
          (error && error.status === 0 ? ". Choose the same file again to go on from where it stopped." : ""));
      });
  });
})();
