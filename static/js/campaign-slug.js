// The campaign form: its address (slug) follows the title until someone types one of their own
// (campaigns/forms.py makes the same slug from the title when the field is left empty).
(function () {
  "use strict";
  const title = document.getElementById("id_title");
  const slug = document.getElementById("id_slug");
  if (!title || !slug) { return; }
  const slugify = text => text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
    .replace(/[^\w\s-]/g, "").trim().replace(/[-\s]+/g, "-").slice(0, 60).replace(/^-+|-+$/g, "");
  let typed = slug.value !== "" && slug.value !== slugify(title.value);
  slug.addEventListener("input", () => { typed = slug.value !== ""; });
  title.addEventListener("input", () => { if (!typed) { slug.value = slugify(title.value); } });
})();
