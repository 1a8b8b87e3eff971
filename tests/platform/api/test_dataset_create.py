"""Creating a dataset through the API with a body of the wrong shape is a 400 naming the field, never
a 500 (a JSON array has no `file`)."""

from rest_framework.test import APIClient


def test_a_json_array_instead_of_a_file_is_a_400(db, django_user_model):
    staff = APIClient()
    staff.force_authenticate(django_user_model.objects.create_user("curator", is_staff=True))
    for body in ([{"file": "x"}], [], "just text", 42):
        response = staff.post("/api/v1/datasets/", body, format="json")
        assert response.status_code == 400, (body, response.status_code)
        assert "file" in response.json()
