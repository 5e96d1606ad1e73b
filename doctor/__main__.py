from rocmdoctor.cli import main

main()
